"""The audit report: one self-contained HTML file of one or several runs.

Rule: may import the vocabulary, ``data``, ``stats`` and ``runs``; never the wiring,
``streamlit`` or ``db``.
"""
