"""Per-client shop state (wishlist, cart, recently viewed), server-side, keyed by a cookie.

State lives in the server process, keyed by an opaque random session id in the
``shop_sid`` cookie. A fresh browser context has no cookie, so it starts with empty state —
unlike the official shop, which keeps this in ``localStorage`` that leaks across sessions when
a runner reuses a context.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field

COOKIE = "shop_sid"
RECENT_MAX = 6


@dataclass
class ShopSession:
    wishlist: list[str] = field(default_factory=list)   # url hashes, insertion order
    cart: dict[str, int] = field(default_factory=dict)  # url hash -> quantity
    recent: list[str] = field(default_factory=list)     # most recent first

    def view(self, url_hash: str) -> None:
        if url_hash in self.recent:
            self.recent.remove(url_hash)
        self.recent.insert(0, url_hash)
        del self.recent[RECENT_MAX:]

    def wish(self, url_hash: str) -> None:
        if url_hash not in self.wishlist:
            self.wishlist.append(url_hash)

    def add_to_cart(self, url_hash: str) -> None:
        self.cart[url_hash] = self.cart.get(url_hash, 0) + 1


class SessionStore:
    """Thread-safe map from session id to :class:`ShopSession` (bounded, oldest evicted)."""

    def __init__(self, max_sessions: int = 10_000) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, ShopSession] = {}
        self.max_sessions = max_sessions

    def get(self, sid: str | None) -> tuple[str, ShopSession, bool]:
        """``(sid, session, is_new)``; an unknown or missing id starts a new session."""
        with self._lock:
            if sid and sid in self._sessions:
                return sid, self._sessions[sid], False
            sid = secrets.token_hex(16)
            if len(self._sessions) >= self.max_sessions:
                self._sessions.pop(next(iter(self._sessions)))
            s = self._sessions[sid] = ShopSession()
            return sid, s, True

    def __len__(self) -> int:
        return len(self._sessions)
