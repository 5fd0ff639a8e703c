"""A lean S3 ``PutObject`` for a loopback endpoint: SigV4 signed here, one kept-alive connection
per thread.

Why: on the local S3 server (the default ``local-s3://`` store) a MemShot render or the catalogue
writes thousands of 30-100 KB objects, and botocore spends ~1.5-2 ms of CPU on each (event hooks,
parameter validation, request building) -- as much as weed spends storing it, and about half of
rendering a shot, on a 2-core machine where CPU is the limit. This path costs ~0.2 ms. It does
one thing: a path-style PUT with given credentials (a session token included) to an ``http://127.0.0.1`` / ``localhost``
endpoint. Anything else (AWS itself, credential chains, retries after an error response) stays
with boto3: :meth:`LeanPut.put` returns False and the caller falls back.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import http.client
import threading
from urllib.parse import quote, urlsplit

_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def usable(endpoint_url: str | None, access_key: str | None, secret_key: str | None) -> bool:
    """Whether puts to this endpoint may take the lean path (plain HTTP on loopback, static keys)."""
    if not (endpoint_url and access_key and secret_key):
        return False
    u = urlsplit(endpoint_url)
    return u.scheme == "http" and u.hostname in _LOOPBACK and u.path in ("", "/")


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


class LeanPut:
    """``put(bucket, key, data, content_type) -> bool`` (True: stored; False: use boto3)."""

    def __init__(self, endpoint_url: str, region: str, access_key: str, secret_key: str,
                 timeout_s: float = 60.0, session_token: str | None = None) -> None:
        u = urlsplit(endpoint_url)
        self.host, self.port = u.hostname or "127.0.0.1", u.port or 80
        self.netloc = u.netloc
        self.region, self.access_key, self.secret_key = region, access_key, secret_key
        self.session_token = session_token  # temporary keys: signed and sent as x-amz-security-token
        self.timeout_s = timeout_s
        self._local = threading.local()
        self._keys: dict[str, bytes] = {}  # date -> signing key (one HMAC chain a day)

    def _conn(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        return conn

    def _drop(self) -> None:
        conn, self._local.conn = getattr(self._local, "conn", None), None
        if conn is not None:
            conn.close()

    def _signing_key(self, day: str) -> bytes:
        key = self._keys.get(day)
        if key is None:
            key = _hmac(_hmac(_hmac(_hmac(("AWS4" + self.secret_key).encode(), day), self.region), "s3"),
                        "aws4_request")
            self._keys = {day: key}
        return key

    def headers(self, bucket: str, key: str, data: bytes, content_type: str | None,
                now: _dt.datetime | None = None) -> tuple[str, dict[str, str]]:
        """``(path, headers)`` of the signed PUT (AWS Signature Version 4, path-style)."""
        now = now or _dt.datetime.now(_dt.timezone.utc)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        path = "/" + quote(bucket, safe="") + "/" + quote(key, safe="/-_.~")
        payload = hashlib.sha256(data).hexdigest()
        hdrs = {"host": self.netloc, "x-amz-content-sha256": payload, "x-amz-date": amz_date}
        if content_type:
            hdrs["content-type"] = content_type
        if self.session_token:
            hdrs["x-amz-security-token"] = self.session_token
        names = sorted(hdrs)
        signed = ";".join(names)
        canonical = "\n".join(["PUT", path, "", *(f"{n}:{hdrs[n].strip()}" for n in names), "", signed, payload])
        scope = f"{day}/{self.region}/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        sig = hmac.new(self._signing_key(day), to_sign.encode(), hashlib.sha256).hexdigest()
        hdrs["authorization"] = (f"AWS4-HMAC-SHA256 Credential={self.access_key}/{scope}, "
                                 f"SignedHeaders={signed}, Signature={sig}")
        hdrs["content-length"] = str(len(data))
        return path, hdrs

    def put(self, bucket: str, key: str, data: bytes, content_type: str | None = None) -> bool:
        """Store ``data``; False (nothing known to be stored) on any failure, for boto3 to redo."""
        path, hdrs = self.headers(bucket, key, data, content_type)
        for attempt in range(2):  # a kept-alive connection the server closed meanwhile: reconnect once
            try:
                conn = self._conn()
                conn.request("PUT", path, body=data, headers=hdrs)
                resp = conn.getresponse()
                resp.read()
                if resp.getheader("connection", "").lower() == "close":
                    self._drop()
                return 200 <= resp.status < 300
            except (http.client.HTTPException, OSError):
                self._drop()
        return False
