"""``QdrantServerStore``: memory in a Qdrant server or cluster, through ``qdrant-client``.

The production backend: many workers share one server. With
``location=":memory:"`` the same class runs on qdrant-client's local mode, a
pure-Python stand-in that is only fit for tests (it ignores payload indexes and
scores every point on each query).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qdrant_client import AsyncQdrantClient, models

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.memory._store import (
    INDEXED_FIELDS,
    Condition,
    IsEmpty,
    Match,
    MatchAny,
    MemoryStore,
    Range,
    StoredPoint,
    StoreFilter,
)
from smyth_temporal.settings import MemorySettings

__all__ = ["QdrantServerStore"]

WRITE_BATCH = 256
"""Points per upsert request (the server refuses requests over 32 MB by default)."""

SCROLL_PAGE = 1000
"""Records per scroll request."""

_SCHEMA_TYPES: dict[str, models.PayloadSchemaType] = {
    "keyword": models.PayloadSchemaType.KEYWORD,
    "integer": models.PayloadSchemaType.INTEGER,
    "float": models.PayloadSchemaType.FLOAT,
    "bool": models.PayloadSchemaType.BOOL,
    "datetime": models.PayloadSchemaType.DATETIME,
    "uuid": models.PayloadSchemaType.UUID,
}


class QdrantServerStore(MemoryStore):
    """A ``MemoryStore`` on a Qdrant server (or qdrant-client's local mode for tests).

    Added in 0.1.0.
    """

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        location: str | None = None,
        client: AsyncQdrantClient | None = None,
    ) -> None:
        """Connect lazily (the client opens its connection on the first request).

        Args:
            url: The server, e.g. ``http://localhost:6333``.
            api_key: The server's API key, if it needs one.
            location: ``":memory:"`` for qdrant-client's local mode, or a server URL.
            client: A client to use instead; the caller keeps ownership (``close``
                leaves it open).

        Raises:
            ConfigurationError: ``client`` together with connection settings.
        """
        if client is not None and (url or api_key or location):
            raise ConfigurationError("pass either a client or url/api_key/location, not both")
        self._owns_client = client is None
        # No version check: it is a blocking HTTP request made in the constructor.
        self.client = client or AsyncQdrantClient(
            url=url, api_key=api_key, location=location, check_compatibility=False
        )

    @classmethod
    def from_env(cls) -> QdrantServerStore:
        """The server named by ``QDRANT_URL`` (and ``QDRANT_API_KEY``, if set).

        Raises:
            ConfigurationError: ``QDRANT_URL`` is not set.
        """
        return cls.from_settings(MemorySettings.load())

    @classmethod
    def from_settings(cls, settings: MemorySettings) -> QdrantServerStore:
        """The server ``settings`` name (``qdrant_url``, ``qdrant_api_key``).

        Raises:
            ConfigurationError: No server is named.

        Added in 0.9.0.
        """
        if not settings.qdrant_url:
            raise ConfigurationError("QDRANT_URL is not set")
        key = settings.qdrant_api_key
        return cls(url=settings.qdrant_url, api_key=key.get_secret_value() if key else None)

    async def ensure_collection(self, name: str, dimension: int) -> None:
        """Create the collection unless it exists; add any missing payload index.

        Raises:
            ConfigurationError: The collection exists with another vector configuration.
        """
        if not await self.client.collection_exists(name):
            try:
                await self.client.create_collection(
                    name,
                    vectors_config=models.VectorParams(
                        size=dimension, distance=models.Distance.COSINE
                    ),
                )
            except Exception:
                # Another worker may have created it since we looked.
                if not await self.client.collection_exists(name):
                    raise
        info = await self.client.get_collection(name)
        vectors = info.config.params.vectors
        if not isinstance(vectors, models.VectorParams) or (
            vectors.size != dimension or vectors.distance != models.Distance.COSINE
        ):
            raise ConfigurationError(
                f"collection {name!r} exists with vectors {vectors!r},"
                f" not one cosine vector of dimension {dimension}"
            )
        for field, kind in INDEXED_FIELDS.items():
            if field not in info.payload_schema:
                await self.client.create_payload_index(
                    name, field, field_schema=_index(field, kind), wait=True
                )

    async def upsert(self, collection: str, points: Sequence[StoredPoint]) -> None:
        """Insert or replace points (in batches of ``WRITE_BATCH``)."""
        for start in range(0, len(points), WRITE_BATCH):
            batch = [_to_point_struct(p) for p in points[start : start + WRITE_BATCH]]
            await self.client.upsert(collection, points=batch, wait=True)

    async def retrieve(self, collection: str, ids: Sequence[str]) -> list[StoredPoint]:
        """The points with these ids that exist (payload only)."""
        if not ids:
            return []
        records = await self.client.retrieve(
            collection, ids=list(ids), with_payload=True, with_vectors=False
        )
        return [StoredPoint(str(r.id), dict(r.payload or {})) for r in records]

    async def search(
        self, collection: str, vector: Sequence[float], filter: StoreFilter, limit: int
    ) -> list[tuple[StoredPoint, float]]:
        """The ``limit`` nearest points that match ``filter``, best first."""
        response = await self.client.query_points(
            collection,
            query=list(vector),
            query_filter=_to_filter(filter),
            limit=limit,
            with_payload=True,
            with_vectors=False,
        )
        return [(StoredPoint(str(p.id), dict(p.payload or {})), p.score) for p in response.points]

    async def scroll(
        self, collection: str, filter: StoreFilter, limit: int | None = None
    ) -> list[StoredPoint]:
        """Every point that matches ``filter``, in id order (up to ``limit``)."""
        query_filter = _to_filter(filter)
        points: list[StoredPoint] = []
        offset: models.ExtendedPointId | None = None
        while limit is None or len(points) < limit:
            page = SCROLL_PAGE if limit is None else min(SCROLL_PAGE, limit - len(points))
            records, next_offset = await self.client.scroll(
                collection,
                scroll_filter=query_filter,
                limit=page,
                offset=offset,
                with_payload=True,
                with_vectors=False,
            )
            points.extend(StoredPoint(str(r.id), dict(r.payload or {})) for r in records)
            if next_offset is None:
                break
            # Only ids come back as offsets here, never a sparse or named vector.
            offset = next_offset  # type: ignore[assignment]
        return points

    async def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete points by id (missing ids are ignored)."""
        if not ids:
            return
        await self.client.delete(
            collection, points_selector=models.PointIdsList(points=list(ids)), wait=True
        )

    async def set_payload(
        self, collection: str, ids: Sequence[str], payload: dict[str, Any]
    ) -> None:
        """Merge ``payload`` into these points' payloads (missing ids are ignored)."""
        if not ids:
            return
        # By filter, not by id list: with an id list a missing id fails the request
        # after the other points have changed.
        selection = models.Filter(must=[models.HasIdCondition(has_id=list(ids))])
        await self.client.set_payload(
            collection, payload=payload, points=models.FilterSelector(filter=selection), wait=True
        )

    async def close(self) -> None:
        """Close the client (unless it was passed in)."""
        if self._owns_client:
            await self.client.close()


def _index(field: str, kind: str) -> models.PayloadSchemaType | models.KeywordIndexParams:
    if field == "tenant":
        # Qdrant's multitenancy layout: points of one tenant are stored together.
        return models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
    return _SCHEMA_TYPES[kind]


def _to_point_struct(point: StoredPoint) -> models.PointStruct:
    return models.PointStruct(id=point.id, vector=point.vector_list(), payload=point.payload)


def _to_filter(filter: StoreFilter) -> models.Filter | None:
    if not filter.must and not filter.must_not and not filter.should:
        return None
    return _to_nested(filter)


def _to_nested(filter: StoreFilter) -> models.Filter:
    return models.Filter(
        must=[_to_condition(c) for c in filter.must] or None,
        must_not=[_to_condition(c) for c in filter.must_not] or None,
        should=[_to_condition(c) for c in filter.should] or None,
    )


def _to_condition(
    condition: Condition,
) -> models.FieldCondition | models.IsEmptyCondition | models.Filter:
    if isinstance(condition, StoreFilter):
        return _to_nested(condition)
    if isinstance(condition, IsEmpty):
        return models.IsEmptyCondition(is_empty=models.PayloadField(key=condition.key))
    if isinstance(condition, Match):
        return models.FieldCondition(
            key=condition.key, match=models.MatchValue(value=condition.value)
        )
    if isinstance(condition, MatchAny):
        return models.FieldCondition(
            key=condition.key, match=models.MatchAny(any=list(condition.values))
        )
    if isinstance(condition, Range):
        return models.FieldCondition(
            key=condition.key,
            range=models.Range(
                gt=condition.gt, gte=condition.gte, lt=condition.lt, lte=condition.lte
            ),
        )
    raise TypeError(f"unsupported condition {condition!r}")
