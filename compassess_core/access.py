"""Who may use the app and how: the serving modes, identities from sign-in, roles, and the first
admins from configuration.

The app runs in one of three modes (:func:`serving_mode`):

* ``sign-in``: ``[auth]`` is configured in ``.streamlit/secrets.toml`` (Streamlit's OpenID Connect
  sign-in): every page needs a signed-in person with a role stored in the database;
* ``local``: no sign-in, served on a loopback address only: one person, the owner of the process,
  who may do everything (``make run``);
* ``anonymous``: no sign-in on a non-loopback address, allowed only when
  ``COMPASSESS_ALLOW_ANONYMOUS=1`` says so explicitly (for example behind a proxy that
  authenticates); everyone may do everything. Without that variable the app refuses to serve
  (:func:`serving_problem`).

Roles (:data:`ROLES`): an **admin** may do everything (upload, run, cancel, import, export, people,
guidelines); an **annotator** judges pairs on Annotate and sees their own agreement. The first
admins are the identities listed in ``COMPASSESS_ADMINS``.

Pure: this module must never import ``streamlit`` or ``db``.
"""

from __future__ import annotations

import getpass
import ipaddress
import os
import re
from typing import Mapping

from .errors import InputError
from .limits import MAX_ID_CHARS

ADMIN, ANNOTATOR = "admin", "annotator"
ROLES = (ADMIN, ANNOTATOR)
SIGN_IN, LOCAL, ANONYMOUS = "sign-in", "local", "anonymous"
#: Identities (e-mail addresses) that are admins whatever the database says.
ADMINS_ENV = "COMPASSESS_ADMINS"
#: "1" allows serving without sign-in on a non-loopback address.
ALLOW_ANONYMOUS_ENV = "COMPASSESS_ALLOW_ANONYMOUS"
#: Who added a role that came from configuration.
FROM_CONFIGURATION = "configuration"


class AccessError(InputError):
    """The signed-in account cannot be used (no usable identity, or an unverified address)."""


def normalise_identity(identity: str) -> str:
    """An identity as stored: surrounding space removed, lower case (e-mail addresses are
    compared case-insensitively in practice)."""
    return identity.strip().lower()


def identity_from_claims(claims: Mapping[str, object]) -> str:
    """The identity of a signed-in person from the provider's claims (``st.user``).

    The e-mail address when the provider gives one (refused when the provider says it is not
    verified: anyone could have typed it), else the provider's subject ``sub``.

    Raises
    ------
    AccessError
        No e-mail and no subject, an unverified e-mail, or an identity longer than 255 characters.
    """
    email = str(claims.get("email") or "").strip()
    if email:
        if claims.get("email_verified") is False:
            raise AccessError(f"the identity provider says the address {email} is not verified; "
                              "verify it there, then sign in again")
        identity = email
    else:
        identity = str(claims.get("sub") or "").strip()
    if not identity:
        raise AccessError("the identity provider gave neither an e-mail address nor a subject "
                          "('sub'): ask its administrator to release the 'email' claim")
    if len(identity) > MAX_ID_CHARS or any(ord(c) < 32 for c in identity):
        raise AccessError("the identity provider gave an identity that cannot be stored "
                          f"(over {MAX_ID_CHARS} characters or with control characters)")
    return normalise_identity(identity)


def configured_admins(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The identities in ``$COMPASSESS_ADMINS`` (separated by commas, semicolons or spaces)."""
    env = os.environ if environ is None else environ
    raw = env.get(ADMINS_ENV, "")
    return frozenset(normalise_identity(x) for x in re.split(r"[,;\s]+", raw) if x.strip())


def anonymous_allowed(environ: Mapping[str, str] | None = None) -> bool:
    """``$COMPASSESS_ALLOW_ANONYMOUS`` is 1/true/yes."""
    env = os.environ if environ is None else environ
    return env.get(ALLOW_ANONYMOUS_ENV, "").strip().lower() in ("1", "true", "yes")


def is_loopback(address: str | None) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``; False for wildcards, other hosts, or unset
    (Streamlit then listens on every interface)."""
    if not address:
        return False
    host = address.strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serving_mode(sign_in_configured: bool, address: str | None) -> str:
    """``sign-in``, ``local`` or ``anonymous`` for a server on ``address`` (module docstring)."""
    if sign_in_configured:
        return SIGN_IN
    if is_loopback(address):
        return LOCAL
    return ANONYMOUS


def serving_problem(sign_in_configured: bool, address: str | None,
                    environ: Mapping[str, str] | None = None) -> str | None:
    """Why the app must not serve on ``address`` (None when it may).

    Without sign-in only a loopback address is served, unless anonymous access is allowed.
    """
    if serving_mode(sign_in_configured, address) != ANONYMOUS:
        return None
    if anonymous_allowed(environ):
        return None
    where = address or ("an address it cannot check (server.address is not set, or an ASGI "
                        "server other than `streamlit run` serves it)")
    return (f"refusing to serve CompAssess on {where} without sign-in: anyone who reaches the "
            "port could run models, import labels and label as anyone. Configure sign-in ([auth] "
            "in .streamlit/secrets.toml, see docs/deploy.md), or serve on 127.0.0.1 (make run), "
            f"or set {ALLOW_ANONYMOUS_ENV}=1 to allow anonymous access on purpose.")


def local_identity() -> str:
    """Who uses a single-user app: the account that runs it (``getpass.getuser``)."""
    try:
        return normalise_identity(getpass.getuser()) or "local"
    except (KeyError, OSError):  # no passwd entry (some containers)
        return "local"
