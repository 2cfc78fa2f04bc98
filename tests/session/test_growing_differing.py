"""What sets one of a pane's versions apart, kept as the versions grow (compare.GrowingDiffering), against the
reading of every entry at once that compare.differing did before it was built on those counts (kept here)."""

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from app.session import compare

LABELS = ("T", "seed", "top-p", "model")
entries = st.lists(st.dictionaries(st.sampled_from(LABELS), st.sampled_from(("0", "0.5", "1", "2")), min_size=1),
                   min_size=1, max_size=12)


def read_at_once(values: list[dict[str, str]]) -> list[dict[str, str]]:
    if len(values) < 2:
        return [{} for _ in values]
    labels = [label for label in values[0] if all(label in v for v in values)]
    common = {label: Counter(v[label] for v in values).most_common(1)[0][0] for label in labels}
    varying = {label for label in labels if len({v[label] for v in values}) > 1}
    own = {label for label in labels if len({v[label] for v in values}) == len(values)}  # a seed sweep
    return [{k: v[k] for k in labels if k in varying and (v[k] != common[k] or k in own)} for v in values]


@settings(max_examples=300, deadline=None)
@given(entries)
def test_it_answers_as_differing_for_every_entry_at_every_length(values):
    growing = compare.GrowingDiffering()
    for n, entry in enumerate(values, start=1):
        growing.add(entry)
        expected = read_at_once(values[:n])
        assert [growing.of(v) for v in values[:n]] == expected
        assert compare.differing(values[:n]) == expected


def test_a_seed_sweep_shows_each_seed_and_a_changed_temperature_shows_only_where_it_differs():
    growing = compare.GrowingDiffering()
    runs = [{"T": "0.7", "seed": str(i)} for i in range(4)] + [{"T": "1.0", "seed": "9"}]
    for run in runs:
        growing.add(run)
    assert growing.of(runs[0]) == {"seed": "0"}
    assert growing.of(runs[-1]) == {"T": "1.0", "seed": "9"}
