"""Each filter catches its planted defect class and keeps genuine items at the stated rates."""

import pytest
from videokr.filters import BlindTextFilter, LicenseFilter, MinHashDedup
from videokr.manifest import LicensePolicy
from videokr.microworld import make_microworld, video_hash
from videokr.pipeline import defect_report, filter_world


@pytest.fixture(scope="module")
def filtered():
    world = make_microworld(150, seed=3)
    train, test, reports = filter_world(world, seed=0)
    return world, train, test, reports


def _rows(world, split, kept):
    return {r["defect"]: r for r in defect_report(world, split, kept)}


def test_filters_catch_planted_defects_and_keep_genuine(filtered):
    world, train, test, _ = filtered
    for split, kept in (("train", train), ("eval", test)):
        rows = _rows(world, split, kept)
        genuine = rows.pop("genuine (kept)")
        assert genuine["caught"] >= 0.9 * genuine["planted"], (split, genuine)
        for cls, row in rows.items():
            rate = 0.95 if cls in ("shortcut", "license", "overlap") else 0.8
            assert row["caught"] >= rate * row["planted"], (split, cls, row)


def test_blind_filter_removes_shortcuts_keeps_genuine(filtered):
    world = filtered[0]
    rep = BlindTextFilter()(world.train)
    shortcuts = [r["id"] for r in world.train if world.defects.get(r["id"]) == "shortcut"]
    genuine = [r["id"] for r in world.train if r["id"] not in world.defects]
    assert sum(i in rep.removed for i in shortcuts) >= 0.95 * len(shortcuts)
    assert sum(i not in rep.removed for i in genuine) >= 0.9 * len(genuine)
    assert all("text alone" in why for why in rep.removed.values())


def test_no_video_overlap_after_contamination_filter(filtered):
    world, train, test, _ = filtered
    raw_overlap = {video_hash(world.store.load(r["video_path"])) for r in world.train} & {
        video_hash(world.store.load(r["video_path"])) for r in world.eval
    }
    assert raw_overlap  # the micro-world plants re-uploads
    after = {video_hash(world.store.load(r["video_path"])) for r in train} & {
        video_hash(world.store.load(r["video_path"])) for r in test
    }
    assert after == set()


def test_license_policy_flags():
    world = make_microworld(40, seed=5)
    strict = LicenseFilter(world.manifest)(world.train + world.eval)
    assert strict.removed and all("license rejected" in w for w in strict.removed.values())
    lenient = LicenseFilter(world.manifest, LicensePolicy(allow_nc=True, allow_nd=True))(
        world.train + world.eval
    )
    assert len(lenient.removed) < len(strict.removed)
    assert all("YouTube" in w for w in lenient.removed.values())


def test_minhash_removes_near_duplicates_only():
    world = make_microworld(60, seed=6)
    rep = MinHashDedup(world.store)(world.train)
    dups = {r["id"] for r in world.train if world.defects.get(r["id"]) == "near_duplicate"}
    assert dups and dups <= set(rep.removed)
    assert set(rep.removed) == dups
