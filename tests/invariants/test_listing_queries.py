"""Listings: page tokens survive the trip through a URL, tenants never escape a query."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.clients._visibility import tenant_clause
from smyth_temporal.gateway._listing import decode_token, encode_token


@given(st.binary(min_size=1, max_size=512))
def test_a_page_token_comes_back_as_it_was_given(token: bytes) -> None:
    text = encode_token(token)
    assert text is not None and text.isascii() and "=" not in text
    assert all(c.isalnum() or c in "-_" for c in text)  # safe in a query string as is
    assert decode_token(text) == token


@given(st.text(max_size=200))
def test_a_tenant_is_quoted_into_a_query_only_when_it_cannot_escape_it(tenant: str) -> None:
    clause = tenant_clause(tenant)
    if clause is None:
        return  # filtered by its input instead, never spliced in
    assert clause == f"(SmythTenant = '{tenant}' OR SmythTenant IS NULL)"
    assert not set(tenant) & set("'\\\"() \t\n")
