"""onnx_light.kernel_tuning: export, import, merge and diff of cache files (issue 21)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import onnx_light
from onnx_light import kernel_tuning, reports

FLOAT = 1
NEW = ["export_kernel_tuning_cache", "import_kernel_tuning_cache", "merge_kernel_tuning_caches",
       "diff_kernel_tuning_caches"]


def make_cache(path: Path, abs_one: int = 1024, abs_two: int = 4096) -> str:
    """A cache of this machine: Abs float at 1 and 2 threads."""
    kernel_tuning.set_kernel_tuning_parameters("Abs", FLOAT, {"parallel.minimum_elements": abs_one}, path=str(path),
                                               num_threads=1, load=False)
    kernel_tuning.set_kernel_tuning_parameters("Abs", FLOAT, {"parallel.minimum_elements": abs_two}, path=str(path),
                                               num_threads=2, load=False)
    return str(path)


def profile_identities(path: str) -> list:
    """Key, host, values and provenance of every profile, as inspect reports them."""
    drop = {"index", "layer", "local", "classification", "shadowed"}
    return sorted(json.dumps({k: v for k, v in p.items() if k not in drop}, sort_keys=True)
                  for p in kernel_tuning.inspect_kernel_tuning_cache(path, user_only=True)["profiles"])


def with_value(text: str, old: int, new: int, written: str | None = None) -> str:
    text = text.replace(f'"parallel.minimum_elements" = {old}\n', f'"parallel.minimum_elements" = {new}\n')
    if written is not None:
        text = re.sub(r"(?m)^written = .*$", f"written = {written}", text)
    return text


@pytest.mark.parametrize("name", NEW)
def test_the_new_functions_are_public_and_documented(name):
    function = getattr(kernel_tuning, name)
    assert name in kernel_tuning.__all__
    assert function.__doc__ and "Example::" in function.__doc__
    assert onnx_light.TuningConflictError is kernel_tuning.TuningConflictError
    assert issubclass(kernel_tuning.TuningConflictError, ValueError)


def test_export_then_import_into_an_empty_cache_gives_the_same_profiles(tmp_path):
    source = make_cache(tmp_path / "source.cache")
    exported = kernel_tuning.export_kernel_tuning_cache(tmp_path / "out.cache", source)
    assert isinstance(exported, reports.ExportReport)
    assert exported["status"] == "exported" and exported["exported_count"] == 2 and not exported["all_hosts"]
    assert [p["effective_threads"] for p in exported["profiles"]] == [1, 2]
    assert not (tmp_path / "out.cache.lock").exists()
    fresh = str(tmp_path / "fresh" / "kernel_tuning.cache")
    imported = kernel_tuning.import_kernel_tuning_cache(tmp_path / "out.cache", fresh)
    assert isinstance(imported, reports.ImportReport)
    assert imported["status"] == "imported" and imported["added_count"] == 2 and imported["conflicts"] == []
    assert profile_identities(fresh) == profile_identities(source)
    assert Path(fresh).read_bytes() == Path(source).read_bytes()
    again = kernel_tuning.import_kernel_tuning_cache([tmp_path / "out.cache"], fresh)
    assert again["status"] == "unchanged" and again["kept_count"] == 2


def test_export_filters_and_other_hosts(tmp_path, run_cli):
    source = make_cache(tmp_path / "source.cache")
    one = kernel_tuning.export_kernel_tuning_cache(tmp_path / "one.cache", source, num_threads=1, kernel="Abs")
    assert one["exported_count"] == 1 and one["profiles"][0]["values"]["parallel.minimum_elements"] == 1024
    host = json.loads(run_cli("host", "--json", "--threads", "2").stdout)
    other = dict(host, stepping=host["stepping"] + 1)
    (tmp_path / "other.json").write_text(json.dumps(other))
    none = kernel_tuning.export_kernel_tuning_cache(tmp_path / "none.cache", source, as_host=tmp_path / "other.json")
    assert none["exported_count"] == 0 and none["host"]["stepping"] == other["stepping"]
    every = kernel_tuning.export_kernel_tuning_cache(tmp_path / "all.cache", source, all_hosts=True)
    assert every["exported_count"] == 2 and every["host"] is None
    with pytest.raises(ValueError, match="as_host or all_hosts"):
        kernel_tuning.export_kernel_tuning_cache(tmp_path / "x.cache", source, all_hosts=True,
                                                 as_host=tmp_path / "other.json")
    with pytest.raises(ValueError, match="output must name the file"):
        kernel_tuning.export_kernel_tuning_cache("-", source)
    with pytest.raises(KeyError, match="no such cache file"):
        kernel_tuning.export_kernel_tuning_cache(tmp_path / "x.cache", tmp_path / "absent.cache")
    (tmp_path / "notes.txt").write_text("not a cache\n")
    with pytest.raises(kernel_tuning.TuningCacheError) as raised:
        kernel_tuning.export_kernel_tuning_cache(tmp_path / "notes.txt", source)
    assert raised.value.status == "malformed"
    assert (tmp_path / "notes.txt").read_text() == "not a cache\n"


def test_a_conflict_names_both_sides_and_each_policy_settles_it(tmp_path):
    cache = make_cache(tmp_path / "cache")
    mine = Path(str(tmp_path / "mine.cache"))
    kernel_tuning.export_kernel_tuning_cache(mine, cache, num_threads=2)
    newer = tmp_path / "newer.cache"
    newer.write_text(with_value(mine.read_text(), 4096, 32768, "2099-01-01T00:00:00Z"))
    before = Path(cache).read_bytes()

    kept = kernel_tuning.import_kernel_tuning_cache(newer, cache)
    assert kept["on_conflict"] == "keep" and kept["conflict_count"] == 1
    (conflict,) = kept["conflicts"]
    assert conflict["resolution"] == "kept" and conflict["kernel"] == "Abs" and conflict["effective_threads"] == 2
    assert conflict["existing"]["values"]["parallel.minimum_elements"] == 4096
    assert conflict["existing"]["source"] == cache
    assert conflict["incoming"]["values"]["parallel.minimum_elements"] == 32768
    assert conflict["incoming"]["provenance"]["written"] == "2099-01-01T00:00:00Z"
    assert conflict["incoming"]["source"] == str(newer)
    assert Path(cache).read_bytes() == before

    with pytest.raises(kernel_tuning.TuningConflictError, match="nothing was written") as raised:
        kernel_tuning.import_kernel_tuning_cache(newer, cache, on_conflict="fail")
    assert raised.value.conflicts[0]["resolution"] == "unresolved"
    assert raised.value.report["status"] == "conflict"
    assert Path(cache).read_bytes() == before

    replaced = kernel_tuning.import_kernel_tuning_cache(newer, cache, on_conflict="newest")
    assert replaced["replaced_count"] == 1 and replaced["conflicts"][0]["resolution"] == "replaced"
    values = [p["values"]["parallel.minimum_elements"]
              for p in kernel_tuning.inspect_kernel_tuning_cache(cache, num_threads=2, user_only=True)["profiles"]]
    assert values == [32768]

    with pytest.raises(ValueError, match="unknown conflict policy 'oldest'"):
        kernel_tuning.import_kernel_tuning_cache(newer, cache, on_conflict="oldest")


def test_an_invalid_import_file_changes_nothing(tmp_path):
    cache = make_cache(tmp_path / "cache")
    mine = tmp_path / "mine.cache"
    kernel_tuning.export_kernel_tuning_cache(mine, cache)
    bad = tmp_path / "bad.cache"
    bad.write_text(with_value(mine.read_text(), 4096, -5))
    before = Path(cache).read_bytes()
    with pytest.raises(onnx_light.InvalidValueError) as raised:
        kernel_tuning.import_kernel_tuning_cache([mine, bad], cache, on_conflict="replace")
    message = str(raised.value)
    assert "nothing was written" in message and str(bad) in message and "profile 1" in message
    assert "parallel.minimum_elements" in message
    assert Path(cache).read_bytes() == before
    (tmp_path / "broken.cache").write_text("[[profile\n")
    with pytest.raises(ValueError, match="broken.cache is malformed"):
        kernel_tuning.import_kernel_tuning_cache(tmp_path / "broken.cache", cache)
    with pytest.raises(KeyError, match="no such cache file"):
        kernel_tuning.import_kernel_tuning_cache(tmp_path / "absent.cache", cache)
    with pytest.raises(TypeError, match="files must hold paths"):
        kernel_tuning.import_kernel_tuning_cache([1], cache)
    with pytest.raises(ValueError, match="at least one"):
        kernel_tuning.import_kernel_tuning_cache([], cache)
    assert Path(cache).read_bytes() == before


def test_merge_is_order_independent_idempotent_and_fails_on_a_conflict(tmp_path):
    cache = make_cache(tmp_path / "cache")
    one = tmp_path / "one.cache"
    two = tmp_path / "two.cache"
    kernel_tuning.export_kernel_tuning_cache(one, cache, num_threads=1)
    kernel_tuning.export_kernel_tuning_cache(two, cache, num_threads=2)
    ab = kernel_tuning.merge_kernel_tuning_caches([one, two], tmp_path / "ab.cache")
    ba = kernel_tuning.merge_kernel_tuning_caches([two, one], tmp_path / "ba.cache")
    assert isinstance(ab, reports.MergeReport)
    assert ab["status"] == "merged" and ab["profile_count"] == 2 and ab["inputs"][0]["profiles"] == 1
    assert (tmp_path / "ab.cache").read_bytes() == (tmp_path / "ba.cache").read_bytes() == Path(cache).read_bytes()
    kernel_tuning.merge_kernel_tuning_caches([tmp_path / "ab.cache"] * 2, tmp_path / "abab.cache")
    assert (tmp_path / "abab.cache").read_bytes() == (tmp_path / "ab.cache").read_bytes()

    other = tmp_path / "other.cache"
    other.write_text(with_value(two.read_text(), 4096, 8192))
    with pytest.raises(kernel_tuning.TuningConflictError) as raised:
        kernel_tuning.merge_kernel_tuning_caches([two, other], tmp_path / "never.cache")
    (conflict,) = raised.value.conflicts
    assert (conflict["existing"]["values"]["parallel.minimum_elements"],
            conflict["incoming"]["values"]["parallel.minimum_elements"]) == (4096, 8192)
    assert not (tmp_path / "never.cache").exists()
    kept = kernel_tuning.merge_kernel_tuning_caches([two, other], tmp_path / "kept.cache", on_conflict="keep")
    assert kept["conflicts"][0]["resolution"] == "kept"
    assert '"parallel.minimum_elements" = 4096' in (tmp_path / "kept.cache").read_text()


def test_diff_and_the_same_dictionary_as_the_cli(tmp_path, run_cli):
    cache = make_cache(tmp_path / "cache")
    a = tmp_path / "a.cache"
    kernel_tuning.export_kernel_tuning_cache(a, cache)
    b = tmp_path / "b.cache"
    b.write_text(with_value(a.read_text(), 4096, 16384))
    diff = kernel_tuning.diff_kernel_tuning_caches(a, b)
    assert isinstance(diff, reports.DiffReport)
    assert not diff["identical"] and diff["changed_count"] == 1 and diff["unchanged_count"] == 1
    (changed,) = diff["changed"]
    assert changed["changed_values"] == ["parallel.minimum_elements"]
    assert changed["a"]["values"]["parallel.minimum_elements"] == 4096
    assert changed["b"]["values"]["parallel.minimum_elements"] == 16384
    assert kernel_tuning.diff_kernel_tuning_caches(a, a)["identical"]
    cli = json.loads(run_cli("diff", str(a), str(b), "--json").stdout)
    assert cli == dict(diff)
    assert "changed" in str(diff) and diff.to_rows()[0]["changed_values"] == ["parallel.minimum_elements"]
    with pytest.raises(KeyError):
        kernel_tuning.diff_kernel_tuning_caches(a, tmp_path / "absent.cache")
