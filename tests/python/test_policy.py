"""RuntimeParameters' spin and affinity policies from Python: parsing, validation, and the pinning
of a session's pool workers as the kernel reports it (/proc/self/task/*/status)."""
from __future__ import annotations

import gc
import os
from pathlib import Path

import numpy as np
import pytest

from onnx_light.onnx_py import _onnxpykernels

runtime = _onnxpykernels.runtime
ALLOWED = sorted(os.sched_getaffinity(0))


def pool_workers() -> dict[int, str]:
    """Thread id -> Cpus_allowed_list of every live pool worker (threads named onnxl-pool-*)."""
    workers = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            if not (task / "comm").read_text().startswith("onnxl-pool-"):
                continue
            for line in (task / "status").read_text().splitlines():
                if line.startswith("Cpus_allowed_list:"):
                    workers[int(task.name)] = line.split(":", 1)[1].strip()
        except FileNotFoundError:  # the thread ended while listed
            continue
    return workers


def run_once(abs_model, parameters) -> "runtime.RuntimeSession":
    session = runtime.RuntimeSession(abs_model, runtime.RuntimeSessionOptions(parameters=parameters))
    context = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(18)))
    x = np.linspace(-1, 1, 70000, dtype=np.float32)
    context.set("x", runtime.tensor_from_numpy(x))
    session.run(context)
    np.testing.assert_array_equal(runtime.tensor_to_numpy(context.get("y")), np.abs(x))
    return session


def test_spin_policies_by_name_and_microseconds():
    assert runtime.RuntimeParameters().spin == "short" and runtime.RuntimeParameters().spin_us == 50
    assert runtime.RuntimeParameters(spin="none").spin_us == 0
    assert runtime.RuntimeParameters(spin="long").spin_us == 1000
    assert runtime.RuntimeParameters(spin=200).spin == "200us"
    assert runtime.RuntimeParameters(spin="200us").spin_us == 200
    p = runtime.RuntimeParameters(2)
    p.spin = "none"
    assert p.spin == "none" and repr(p) == "RuntimeParameters(num_threads=2, spin='none')"
    with pytest.raises(ValueError, match="spin policy 'fast'"):
        runtime.RuntimeParameters(spin="fast")
    with pytest.raises(ValueError, match="-1"):
        runtime.RuntimeParameters(spin=-1)
    with pytest.raises(TypeError):
        runtime.RuntimeParameters(spin=1.5)


def test_cpu_lists_affinity_and_their_errors():
    first = ALLOWED[0]
    p = runtime.RuntimeParameters(cpus=str(first))
    assert p.affinity == "cpu_list" and p.cpus == [first] and p.effective_threads == 1
    assert runtime.RuntimeParameters(cpus=ALLOWED).effective_threads == len(ALLOWED)
    assert runtime.RuntimeParameters(3, cpus=[first]).effective_threads == 3
    assert repr(runtime.RuntimeParameters(cpus=[first])) == f"RuntimeParameters(num_threads=0, cpus='{first}')"
    cores = runtime.RuntimeParameters(affinity="physical_cores")
    assert cores.affinity == "physical_cores" and len(cores.cpus) == runtime.physical_core_count()
    assert runtime.RuntimeParameters().cpus == [] and runtime.RuntimeParameters().affinity == "none"
    outside = max(ALLOWED) + 4
    with pytest.raises(ValueError, match=rf"CPU {outside} is not in the set this process may run on"):
        runtime.RuntimeParameters(cpus=[first, outside])
    with pytest.raises(ValueError, match="CPU list '3-1'"):
        runtime.RuntimeParameters(cpus="3-1")
    with pytest.raises(ValueError, match="not both"):
        runtime.RuntimeParameters(affinity="physical_cores", cpus=[first])
    with pytest.raises(ValueError, match="'cores'"):
        runtime.RuntimeParameters(affinity="cores")
    with pytest.raises(TypeError):
        runtime.RuntimeParameters(cpus=[0.5])


@pytest.mark.parametrize("cpu", [c for c in ALLOWED if c <= 1])
def test_a_sessions_workers_are_pinned_to_the_cpu_asked_for(abs_model, cpu):
    before = set(pool_workers())
    session = run_once(abs_model, runtime.RuntimeParameters(3, cpus=[cpu], spin="none"))
    assert session.threads == 3
    mine = {tid: cpus for tid, cpus in pool_workers().items() if tid not in before}
    assert sorted(mine.values()) == [str(cpu), str(cpu)], mine
    del session
    gc.collect()
    assert not set(mine) & set(pool_workers())  # joined with the session


def test_unpinned_workers_may_run_anywhere_allowed(abs_model):
    before = set(pool_workers())
    session = run_once(abs_model, runtime.RuntimeParameters(3))
    mine = [cpus for tid, cpus in pool_workers().items() if tid not in before]
    assert len(mine) == 2 and len(set(mine)) == 1, mine
    assert runtime.RuntimeParameters(cpus=mine[0]).cpus == ALLOWED
    del session


def test_calibration_takes_the_policy_and_validates_it_first():
    from onnx_light import kernel_tuning

    first = ALLOWED[0]
    report = kernel_tuning.calibrate_kernel_tuning(
        "Abs", maximum_duration_ms=100, save=False, cpus=[first], spin="none"
    )
    assert report["effective_threads"] == 1  # one thread per listed CPU
    assert len(report["calibrated"]) == 1
    with pytest.raises(ValueError, match="spin policy 'fast'"):
        kernel_tuning.calibrate_kernel_tuning("Abs", maximum_duration_ms=100, save=False, spin="fast")
    with pytest.raises(ValueError, match=rf"CPU {max(ALLOWED) + 4} is not in the set"):
        kernel_tuning.calibrate_kernel_tuning("Abs", maximum_duration_ms=100, save=False, cpus=[max(ALLOWED) + 4])


def test_profiles_are_kept_apart_by_spin_class(tmp_path):
    """A profile set for spin='none' serves sessions whose workers park at once, not spinning ones;
    the two classes of one key and thread count live side by side in the cache."""
    from onnx_light import kernel_tuning

    cache = str(tmp_path / "spin.cache")
    kernel_tuning.set_kernel_tuning_parameters(
        "Abs", "float", {"parallel.minimum_elements": 111}, path=cache, num_threads=2, spin="none")
    kernel_tuning.set_kernel_tuning_parameters(
        "Abs", "float", {"parallel.minimum_elements": 222}, path=cache, num_threads=2)

    def cached(**policy):
        (entry,) = kernel_tuning.kernel_tuning_parameters(
            kernel="Abs", element_type="float", path=cache, num_threads=2, **policy)["kernels"]
        return entry["cached_values"]["parallel.minimum_elements"]

    assert cached(spin="none") == 111
    assert cached(spin=0) == 111  # microseconds: 0 is none
    assert cached() == 222
    assert cached(spin="long") == 222
    profiles = kernel_tuning.inspect_kernel_tuning_cache(cache)["profiles"]
    assert sorted((p["idle_spin"], p["values"]["parallel.minimum_elements"]) for p in profiles) == [
        (False, 111), (True, 222)]
    assert {p["tuning_abi"] for p in profiles} == {3}  # Abs: 2 (its vector default) + 1 (the spin class)
    proposal = kernel_tuning.propose_kernel_tuning_updates(
        kernels="Abs", element_types="float", path=str(tmp_path / "empty.cache"), num_threads=2, spin="none")
    assert [k["kernel"] for k in proposal["missing"]] == ["Abs"]
    with pytest.raises(ValueError, match="spin policy 'fast'"):
        cached(spin="fast")
