"""What comes in and goes out as files: the one table reader, candidate files, human labels,
HTML markup in uploaded texts, and exports.

Rule: imports only the shared vocabulary (``types``, ``errors``, ``limits``, ``report_text``);
never a judge, a run, the statistics, ``streamlit`` or ``db``.
"""
