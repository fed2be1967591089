"""Invariant: a response id only ever names a turn of the caller's own tenant.

A Responses API id is a name (tenant, agent, session, step), not a credential, so the
gateway must never let one decode to another tenant's session: whatever string a key
presents (another tenant's id, a forged one, random text), ``ResponseRef.decode`` either
refuses it with the 404 of a missing response or gives a ref of the key's tenant. And an
id the gateway gave out decodes, for its own tenant, to what it named.
"""

from __future__ import annotations

import base64
import json

import pytest
from fastapi import HTTPException
from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.gateway._responses import ResponseRef
from smyth_temporal.security import Principal

names = st.text(min_size=1, max_size=40)
refs = st.builds(ResponseRef, tenant=names, agent=names, session_id=names, step=st.integers(0))


def _caller(tenant: str) -> Principal:
    return Principal(name="k", tenant=tenant, role="admin")


def _packed(fields: object) -> str:
    return "resp_" + base64.urlsafe_b64encode(json.dumps(fields).encode()).decode().rstrip("=")


@given(ref=refs)
def test_an_id_decodes_to_what_it_named_for_its_tenant(ref: ResponseRef) -> None:
    assert ResponseRef.decode(ref.encode(), _caller(ref.tenant)) == ref


@given(
    presented=st.one_of(
        st.text(max_size=200),
        refs.map(ResponseRef.encode),
        st.lists(st.one_of(names, st.integers(), st.none()), max_size=6).map(_packed),
    ),
    tenant=names,
)
def test_no_id_decodes_to_another_tenants_turn(presented: str, tenant: str) -> None:
    try:
        ref = ResponseRef.decode(presented, _caller(tenant))
    except HTTPException as refused:
        assert refused.status_code == 404
        assert refused.detail == f"no response {presented!r}"
        return
    assert ref.tenant == tenant


@given(ref=refs, other=names)
def test_another_tenants_id_is_a_missing_response(ref: ResponseRef, other: str) -> None:
    if other == ref.tenant:
        return
    with pytest.raises(HTTPException) as refused:
        ResponseRef.decode(ref.encode(), _caller(other))
    assert refused.value.status_code == 404


@pytest.mark.parametrize("depth", [10, 600, 5000])
def test_a_deeply_nested_id_is_a_missing_response(depth: int) -> None:
    # JSON nested past the parser's recursion limit must not become a 500.
    presented = "resp_" + base64.urlsafe_b64encode(b"[" * depth + b"]" * depth).decode()
    with pytest.raises(HTTPException) as refused:
        ResponseRef.decode(presented, _caller("acme"))
    assert refused.value.status_code == 404
