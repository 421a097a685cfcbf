"""Study code of the benchmarks: pure tables and curves built on the engine, not part of it.

``reproduction`` serves ``benchmarks/reproduce_paper.py``, ``fusion_study`` the label-budget study
of ``benchmarks/judges_study.py``; tests import them as ``benchmarks.studies.*`` (the repository
root on the path). They import the installed engine as ``compassess_core``.
"""
