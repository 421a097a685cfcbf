"""CompAssess engine: LLM comparative assessment (Liusie et al.) without any UI or storage code.

This package must never import ``streamlit`` or the ``db`` package: results leave the engine only
through the :class:`compassess_core.sink.ResultSink` interface.
"""

__version__ = "0.1.0"
