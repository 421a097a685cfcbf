"""People: who may use this shared app and as what (admins only; shown only with sign-in).

An admin adds a person by the identity their identity provider reports (their e-mail address),
gives them a role (admin: everything; annotator: Annotate and their own agreement), changes it or
removes them. The first admins come from ``COMPASSESS_ADMINS`` and keep their role while listed
there. Roles are stored by ``db.people``; this page must never decide a role itself, and shows
identities only through ``plain``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from compassess_core.api import access
from compassess_core.api.access import ROLES
from compassess_core.errors import CompAssessError
from pages._auth import guard, require
from pages._common import api_store, plain

me = guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

ROLE_HELP = {"admin": "admin: upload, run, cancel, import, export, guidelines and people",
             "annotator": "annotator: judges pairs on Annotate and sees their own agreement"}

st.title("People")
configured = access.configured_admins()
st.caption("Who may use this app. A person signs in with the identity provider; their identity "
           "here is the e-mail address it reports as verified, else issuer#subject (docs/deploy.md). "
           "Anyone else who signs in sees that they have "
           "no role yet.")

st.subheader("Add a person or change a role")
with st.form("add_person", clear_on_submit=True):
    c1, c2 = st.columns([3, 1])
    identity = c1.text_input("Verified e-mail address, or issuer#subject (as the sidebar shows it)",
                             max_chars=255, placeholder="name@example.org")
    role = c2.selectbox("Role", ROLES, index=ROLES.index("annotator"), format_func=ROLE_HELP.get)
    if st.form_submit_button("Save", type="primary", icon=":material/person_add:"):
        require()  # the person holds the role now (pages/_auth.py)
        who = access.normalise_identity(identity)
        if not who:
            st.error("Type the person's e-mail address.")
        elif who in configured and role != "admin":
            st.error(f"{plain(who)} is an admin through COMPASSESS_ADMINS; remove them from that "
                     "variable to change their role.")
        else:
            try:
                api_store().set_role(who, role, me.identity)
                st.success(f"{plain(who)} is now {role}.")
            except CompAssessError as e:
                st.error(plain(str(e)))

st.subheader("Remove a person")
removable = [p.identity for p in api_store().people() if p.identity not in configured]
if removable:
    c1, c2 = st.columns([3, 1])
    gone = c1.selectbox("Person", removable, format_func=lambda x: plain(x, "text"),
                        key="remove_person")
    if c2.button("Remove", icon=":material/person_remove:", key="remove_person_button"):
        require()  # the person holds the role now (pages/_auth.py)
        try:
            api_store().remove_person(gone)
            st.success(f"{plain(gone)} was removed; their stored judgements stay.")
        except CompAssessError as e:
            st.error(plain(str(e)))
else:
    st.caption("Nobody to remove (admins from COMPASSESS_ADMINS are removed there).")

st.subheader("Everyone with a role")
people = api_store().people()
st.dataframe(plain(pd.DataFrame([dict(
    identity=p.identity, role=p.role,
    added_by=p.added_by + (" (COMPASSESS_ADMINS)" if p.identity in configured else ""),
    since=p.created_at) for p in people], columns=["identity", "role", "added_by", "since"]),
    into="text"), hide_index=True, width="stretch", placeholder="")
