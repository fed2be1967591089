"""A provider's prefix never changes a model's price unless the table names it.

``PriceTable.price("anthropic:NAME")`` is the price of ``NAME`` whenever ``NAME`` has
one and no entry names the whole string, so a call routed by prefix (a fallback model,
say) reserves and is charged at its model's price; any other colon in a name
(``llama3:8b``) is part of the name and is never dropped.
"""

from __future__ import annotations

import fnmatch

from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.types.budget import Price, PriceTable

PROVIDERS = ["openai", "openai-responses", "anthropic", "google"]
names = st.text(alphabet="abcdeo-.0123456789", min_size=1, max_size=12)
# Entries are names or globs over them, none holding a colon: vendors' price lists.
entries = st.dictionaries(
    st.one_of(names, names.map(lambda n: f"{n}*"), names.map(lambda n: f"*{n}")),
    st.builds(Price, input=st.floats(0, 100), output=st.floats(0, 100)),
    max_size=6,
)


@given(entries, st.sampled_from(PROVIDERS), names, st.data())
def test_a_providers_prefix_prices_as_the_bare_name(
    prices: dict[str, Price], provider: str, name: str, data: st.DataObject
) -> None:
    # One entry always prices the name: itself, or a glob over its start or end.
    cut = data.draw(st.integers(0, len(name)))
    own = data.draw(st.sampled_from([name, f"{name[:cut]}*", f"*{name[cut:]}"]))
    table = PriceTable(prices={**prices, own: Price(input=1, output=1)})
    bare = table.price(name)
    assert bare is not None
    assert table.price(f"{provider}:{name}") == bare


@given(entries, names.filter(lambda n: n not in PROVIDERS), names)
def test_any_other_colon_is_part_of_the_name(
    prices: dict[str, Price], tag_owner: str, tag: str
) -> None:
    table = PriceTable(prices=prices)
    model = f"{tag_owner}:{tag}"
    matching = [p for p in prices if fnmatch.fnmatchcase(model, p)]
    assert (table.price(model) is None) == (not matching)


def test_a_glob_over_the_whole_string_never_beats_the_names_own_entry() -> None:
    own, glob = Price(input=1, output=1), Price(input=9, output=9)
    table = PriceTable(prices={"claude-sonnet-4-5": own, "*sonnet-4-5": glob})
    assert table.price("anthropic:claude-sonnet-4-5") == own
