"""The statistics: rankings and their solvers, positional bias, metrics, agreement with people and
its bootstrap, calibration, paired tests, length bias, leaderboards, fusion with human labels,
efficient pair choice, run comparison, panels of judges and the judges' leaderboard.

Rule: small pure functions over arrays and tables; imports only the vocabulary (``types``,
``errors``, ``limits``, ``report_text``) and numeric libraries; never a judge, a run, ``streamlit``
or ``db``.
"""
