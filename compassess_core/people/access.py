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

from ..errors import InputError
from ..limits import MAX_ID_CHARS

ADMIN, ANNOTATOR = "admin", "annotator"
ROLES = (ADMIN, ANNOTATOR)
SIGN_IN, LOCAL, ANONYMOUS = "sign-in", "local", "anonymous"
#: Identities (e-mail addresses) that are admins whatever the database says.
ADMINS_ENV = "COMPASSESS_ADMINS"
#: "1" allows serving without sign-in on a non-loopback address.
ALLOW_ANONYMOUS_ENV = "COMPASSESS_ALLOW_ANONYMOUS"
#: Who added a role that came from configuration.
FROM_CONFIGURATION = "configuration"
#: Issuers whose ``email`` claim counts as verified even without ``email_verified: true``.
VERIFIED_EMAIL_ISSUERS_ENV = "COMPASSESS_VERIFIED_EMAIL_ISSUERS"
#: Joins issuer and subject in an identity; never part of an e-mail identity.
SUBJECT_SEPARATOR = "#"
#: The shortest ``cookie_secret`` accepted (bytes): it signs the sign-in cookie.
MIN_COOKIE_SECRET_BYTES = 32


#: Cookie secrets this project has printed (an earlier docs/deploy.md's trial secrets file, and
#: the fixed secrets its test suite once used): anyone who read them can sign a cookie for any
#: identity, so they are refused like the placeholder.
PUBLISHED_COOKIE_SECRETS = frozenset({
    "a-long-random-test-secret-0123456789",
    "test-cookie-secret-0123456789abcdef0123",
    "0123456789abcdef0123456789abcdef0123456789abcdef",
})
#: Words that make a secret guessable whatever surrounds them (compared in lower case).
WEAK_SECRET_WORDS = ("password", "passwort", "secret", "changeme", "letmein", "qwerty",
                     "example", "streamlit", "compassess", "cookie", "admin", "abcdefgh",
                     "12345678", "01234567")
#: The fewest different characters a cookie secret must hold (a random hex secret of 32
#: characters has about 14; ``'a' * 32`` has one, ``'password' * 4`` seven).
MIN_COOKIE_SECRET_DISTINCT = 8


class AccessError(InputError):
    """The signed-in account cannot be used (no usable identity, or an unverified address)."""


def cookie_secret_problem(auth_section: Mapping[str, object]) -> str | None:
    """Why the ``cookie_secret`` of an ``[auth]`` section must not sign cookies (None when fine):
    missing, shorter than :data:`MIN_COOKIE_SECRET_BYTES` bytes, still a placeholder (any value
    containing ``REPLACE``, as deploy/secrets.example.toml's does), a secret this project has
    published (:data:`PUBLISHED_COOKIE_SECRETS`), or one easy to guess: fewer than
    :data:`MIN_COOKIE_SECRET_DISTINCT` different characters, a short pattern repeated, or a
    common word or sequence in it (:data:`WEAK_SECRET_WORDS`). Anyone who knows the secret can
    sign a cookie for any identity."""
    secret = auth_section.get("cookie_secret")
    if not isinstance(secret, str) or not secret.strip():
        return "[auth] has no cookie_secret (generate one: openssl rand -hex 32)"
    if "REPLACE" in secret.upper():
        return ("[auth] cookie_secret is still the placeholder of the example file; generate one "
                "with openssl rand -hex 32")
    if secret.strip() in PUBLISHED_COOKIE_SECRETS:
        return ("[auth] cookie_secret is a secret printed in CompAssess's documentation or "
                "tests, known to anyone; generate one with openssl rand -hex 32")
    if len(secret.encode("utf-8")) < MIN_COOKIE_SECRET_BYTES:
        return (f"[auth] cookie_secret is shorter than {MIN_COOKIE_SECRET_BYTES} bytes; generate "
                "one with openssl rand -hex 32")
    weakness = _secret_weakness(secret.strip())
    if weakness is not None:
        return (f"[auth] cookie_secret is too easy to guess ({weakness}); generate one with "
                "openssl rand -hex 32")
    return None


def _secret_weakness(secret: str) -> str | None:
    """Why ``secret`` (long enough) could be guessed: too few different characters, a short
    pattern repeated, or a common word or sequence in it (:data:`WEAK_SECRET_WORDS`)."""
    if len(set(secret)) < MIN_COOKIE_SECRET_DISTINCT:
        return (f"{len(set(secret))} different characters; random secrets have "
                f"{MIN_COOKIE_SECRET_DISTINCT} or more")
    n = len(secret)
    for period in range(1, n // 2 + 1):
        if n % period == 0 and secret[:period] * (n // period) == secret:
            return f"one pattern of {period} characters repeated"
    lowered = secret.lower()
    for word in WEAK_SECRET_WORDS:
        if word in lowered:
            return f"it contains the common word or sequence '{word}'"
    return None


def normalise_identity(identity: str) -> str:
    """An identity as stored: surrounding space removed; an e-mail address in lower case (compared
    case-insensitively in practice), an issuer+subject identity (:func:`subject_identity`) kept
    exactly as the provider spelled it (a subject is case-sensitive)."""
    identity = identity.strip()
    return identity if SUBJECT_SEPARATOR in identity else identity.lower()


def subject_identity(issuer: str, subject: str) -> str:
    """The identity of a person whose e-mail address cannot be trusted: ``<issuer>#<subject>``
    (``https://login.example.org/v2.0#8f1c...``), case kept. It always holds ``#`` and an e-mail
    identity never does (:func:`identity_from_claims`), so the two can never collide."""
    return f"{issuer}{SUBJECT_SEPARATOR}{subject}"


def verified_email_issuers(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The issuers in ``$COMPASSESS_VERIFIED_EMAIL_ISSUERS`` whose e-mail addresses count as
    verified without an ``email_verified`` claim (separated by commas, semicolons or spaces;
    compared without a trailing ``/``)."""
    env = os.environ if environ is None else environ
    raw = env.get(VERIFIED_EMAIL_ISSUERS_ENV, "")
    return frozenset(x.strip().rstrip("/") for x in re.split(r"[,;\s]+", raw) if x.strip())


def _usable_email(email: str) -> bool:
    """Never shaped like a subject identity (no ``#``), so the two kinds cannot collide."""
    return bool(email) and SUBJECT_SEPARATOR not in email


def identity_from_claims(claims: Mapping[str, object],
                         verified_issuers: frozenset[str] | None = None) -> str:
    """The identity of a signed-in person from the provider's verified ID-token claims
    (``st.user``: ``iss``, ``sub``, ``email``, ``email_verified``).

    The e-mail address (lower case) only when the provider vouches for it: ``email_verified`` is
    the boolean ``True`` (a missing claim, ``"true"`` or ``"false"`` do not count), or the claim is
    missing and the issuer is one the admin declared in ``$COMPASSESS_VERIFIED_EMAIL_ISSUERS``
    (providers such as Microsoft Entra ID that verify addresses but omit the claim; a provider
    that says ``email_verified: false`` is believed whatever the declaration). Otherwise the issuer+subject identity
    ``<issuer>#<subject>`` (:func:`subject_identity`), case kept: a subject is never read as an
    e-mail address, so a subject ``ADMIN@EXAMPLE.ORG`` is not ``admin@example.org``.

    Raises
    ------
    AccessError
        No trusted e-mail and no issuer or subject, or an identity that cannot be stored (over 255
        characters, control characters).
    """
    issuers = verified_email_issuers() if verified_issuers is None else verified_issuers
    email = str(claims.get("email") or "").strip()
    issuer = str(claims.get("iss") or "").strip()
    subject = str(claims.get("sub") or "").strip()
    # A declared issuer stands in for a claim its provider omits, never for one it makes: an
    # explicit ``email_verified`` other than True (False, "false") always wins.
    trusted = claims.get("email_verified") is True or (
        "email_verified" not in claims and bool(issuer) and issuer.rstrip("/") in issuers)
    if email and trusted and _usable_email(email):
        identity = email.lower()
    elif issuer and subject:
        identity = subject_identity(issuer, subject)
    elif email:
        raise AccessError(f"the identity provider does not say that the address {email} is "
                          "verified (and gives no issuer and subject to identify you by); verify "
                          "it there, then sign in again")
    else:
        raise AccessError("the identity provider gave neither a verified e-mail address nor an "
                          "issuer and subject ('iss', 'sub'): ask its administrator to release "
                          "the 'email' and 'email_verified' claims")
    if len(identity) > MAX_ID_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in identity):
        raise AccessError("the identity provider gave an identity that cannot be stored "
                          f"(over {MAX_ID_CHARS} characters or with control characters)")
    return identity


def sign_in_problem(claims: Mapping[str, object], now: float,
                    signed_out_through: int | None) -> str | None:
    """Why a sign-in must not be used any more (None while it may): ``claims`` are the ID token's,
    which Streamlit keeps in its signed cookie for as long as the cookie lives (30 days), so the
    cookie alone would outlive both the token and a sign-out.

    * the token's expiry ``exp`` (seconds since the epoch) is past, or missing: the identity
      provider bounds every sign-in, as OpenID Connect requires of an ID token;
    * the token was issued (``iat``) at or before ``signed_out_through``, the value the store
      keeps for this person since they last signed out (:func:`signed_out_through`): a cookie
      copied before a sign-out is refused after it; a missing or non-numeric ``iat`` is refused.
    """
    exp, iat = claims.get("exp"), claims.get("iat")
    if not _is_time(exp):
        return "the identity provider's token gives no expiry time; sign in again"
    if now >= float(exp):
        return "your sign-in has expired; sign in again"
    if not _is_time(iat):
        return "the identity provider's token gives no issue time; sign in again"
    if signed_out_through is not None and float(iat) <= signed_out_through:
        return "you signed out since this sign-in; sign in again"
    return None


def signed_out_through(token_issued_at: object, now: float) -> int:
    """What the store keeps when a person signs out at ``now`` with a token issued at
    ``token_issued_at``: every token of theirs issued at or before it is refused from then on
    (:func:`sign_in_problem`).

    ``iat`` counts whole seconds, so a token issued in the second of a sign-out cannot be told
    from one issued just after it. The value is the signed-out token's own ``iat``, or the
    second before the sign-out when that is later: the signed-out cookie and the person's
    earlier ones are refused, and a sign-in right after the sign-out (even in the same second)
    is not; only a token that another browser got earlier in the second of the sign-out stays
    valid until it expires."""
    issued = int(token_issued_at) if _is_time(token_issued_at) else 0
    return max(issued, int(now) - 1)


def _is_time(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def configured_admins(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The identities in ``$COMPASSESS_ADMINS`` (separated by commas, semicolons or spaces):
    verified e-mail addresses or issuer+subject identities (``<issuer>#<subject>``)."""
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
