"""Everything a run is: its settings and options, prompts and the context window, pair selection,
the run kinds (comparative, scoring, absolute), the one run loop with its pacing and result sink,
prompt tuning and a judge's explanations.

Rule: may import the vocabulary, ``data``, ``judges`` and ``stats``; never ``people``, ``report``,
the wiring (``api``, ``cli``, ``worker``), ``streamlit`` or ``db`` (results leave through
``runs.sink.ResultSink``).
"""
