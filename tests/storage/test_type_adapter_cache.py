"""The payload converter's pydantic type adapters outlive temporalio's per-call copies."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import TypeAdapter
from temporalio.contrib.workflow_streams import PollResult
from temporalio.converter import DataConverter

from smyth_temporal import SmythPlugin
from smyth_temporal.security import EncryptionCodec, EncryptionKey, KeyRing


@pytest.mark.parametrize("sealed", [False, True], ids=["storage", "storage+encryption"])
def test_a_client_call_with_payload_storage_reuses_the_type_adapter_of_its_result(
    monkeypatch: pytest.MonkeyPatch, sealed: bool
) -> None:
    # temporalio copies the data converter for every call with external storage
    # (``_with_store_context``: ``dataclasses.replace``), which builds a new payload
    # converter: a cache per instance was always empty, and every query result built
    # its type's pydantic schema again (a stream read's ``PollResult``).
    codec = EncryptionCodec(KeyRing([EncryptionKey("k1", bytes(32))])) if sealed else None
    converter = SmythPlugin(encryption=codec).data_converter
    assert isinstance(converter, DataConverter) and converter.external_storage is not None
    payload = converter.payload_converter.to_payloads([PollResult(items=[], next_offset=3)])
    copies = [dataclasses.replace(converter) for _ in range(3)]
    copies[0].payload_converter.from_payloads(payload, [PollResult])  # the first builds it
    built: list[object] = []
    original = TypeAdapter.__init__

    def counting(self: TypeAdapter[object], *args: object, **kwargs: object) -> None:
        built.append(args)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(TypeAdapter, "__init__", counting)
    for copy in copies[1:]:
        (result,) = copy.payload_converter.from_payloads(payload, [PollResult])
        assert result == PollResult(items=[], next_offset=3)
    assert built == []
