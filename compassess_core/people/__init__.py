"""The people who use the app: access and roles, which pair an annotator sees next, and annotation
campaigns.

Rule: may import the vocabulary and ``stats``; never a judge, a run, ``streamlit`` or ``db``.
"""
