"""Who may use the app, as its server asks (the sign-in gate, the HTTP guard, the People page):
the engine's policy (``compassess_core.people.access``: serving modes, identities from verified claims,
roles, first admins, the cookie secret's fitness, sign-in expiry and sign-out), the upload
limit and the reader of the server's other numeric limits from the environment, re-exported so the pages reach them through the API only. Wiring: nothing here decides
anything itself."""

from __future__ import annotations

from ..people.access import (ADMIN, ALLOW_ANONYMOUS_ENV, ANNOTATOR, ANONYMOUS, FROM_CONFIGURATION,
                             LOCAL, ROLES, SIGN_IN, AccessError, anonymous_allowed,
                             configured_admins, cookie_secret_problem, identity_from_claims,
                             is_loopback, local_identity, normalise_identity, serving_problem,
                             sign_in_problem, signed_out_through)
from ..limits import max_upload_bytes, max_upload_mb, whole_number_from_env

__all__ = ["ADMIN", "ANNOTATOR", "ROLES", "SIGN_IN", "LOCAL", "ANONYMOUS", "FROM_CONFIGURATION",
           "ALLOW_ANONYMOUS_ENV", "AccessError", "anonymous_allowed", "configured_admins",
           "cookie_secret_problem", "identity_from_claims", "is_loopback", "local_identity",
           "normalise_identity", "serving_problem", "sign_in_problem", "signed_out_through",
           "max_upload_bytes", "max_upload_mb", "whole_number_from_env"]
