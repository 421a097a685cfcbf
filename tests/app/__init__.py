"""Tests of the pages through Streamlit's AppTest (app.py and pages/)."""
