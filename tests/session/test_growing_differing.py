"""What sets one of a pane's versions apart, kept as the versions grow (compare.GrowingDiffering), against the
reading of every version at once (compare.differing) that the version bar did on each new version."""

from hypothesis import given, settings
from hypothesis import strategies as st

from app.session import compare

LABELS = ("T", "seed", "top-p", "model")
entries = st.lists(st.dictionaries(st.sampled_from(LABELS), st.sampled_from(("0", "0.5", "1", "2")), min_size=1),
                   min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(entries)
def test_it_answers_as_differing_for_every_entry_at_every_length(values):
    growing = compare.GrowingDiffering()
    for n, entry in enumerate(values, start=1):
        growing.add(entry)
        expected = compare.differing(values[:n])
        assert [growing.of(v) for v in values[:n]] == expected


def test_a_seed_sweep_shows_each_seed_and_a_changed_temperature_shows_only_where_it_differs():
    growing = compare.GrowingDiffering()
    runs = [{"T": "0.7", "seed": str(i)} for i in range(4)] + [{"T": "1.0", "seed": "9"}]
    for run in runs:
        growing.add(run)
    assert growing.of(runs[0]) == {"seed": "0"}
    assert growing.of(runs[-1]) == {"T": "1.0", "seed": "9"}
