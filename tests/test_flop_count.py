"""The matrix work of a training step, counted by hand, and the core's FP32 peak."""
import pytest

from inductionlab.core.flop_count import at_least_measured, core_peak, forward_flop, training_flop


def test_forward_flop_of_the_write_up_s_one_layer_model():
    # T = 24, D = 32, V = 26: q, k, v, o 8 T D^2; scores and weighted values 4 T^2 D;
    # the unembedding 2 T D V
    assert forward_flop(24, 26, 32, 1) == 8 * 24 * 32**2 + 4 * 24**2 * 32 + 2 * 24 * 32 * 26 == 310_272
    assert forward_flop(24, 26, 32, 2) - forward_flop(24, 26, 32, 1) == 8 * 24 * 32**2 + 4 * 24**2 * 32


def test_a_training_step_is_three_forward_passes():
    assert training_flop(24, 26, 32, 1, batch_size=256, steps=10) == 3 * 310_272 * 256 * 10


def _cpuinfo(vendor, family, flags, mhz="2600.000"):
    return (f"vendor_id\t: {vendor}\ncpu family\t: {family}\nmodel name\t: test core\n"
            f"cpu MHz\t\t: {mhz}\nflags\t\t: {flags}\n")


@pytest.mark.parametrize("vendor, family, flags, per_cycle", [
    ("AuthenticAMD", 25, "fpu avx2 fma avx512f", 32),   # Zen 4: AVX-512 on 256-bit pipes
    ("GenuineIntel", 6, "fpu avx2 fma avx512f", 64),    # two 512-bit FMA pipes
    ("AuthenticAMD", 23, "fpu avx2 fma", 32),           # AVX2, two FMA pipes
    ("GenuineIntel", 6, "fpu sse4_2 avx", 16),          # no FMA
])
def test_core_peak_counts_the_vector_units(vendor, family, flags, per_cycle):
    peak = core_peak(_cpuinfo(vendor, family, flags))
    assert peak["flop_per_cycle"] == per_cycle
    assert peak["ghz"] == pytest.approx(2.6) and peak["gflops"] == pytest.approx(2.6 * per_cycle)


def test_a_faster_measured_product_raises_the_peak_only():
    peak = core_peak(_cpuinfo("AuthenticAMD", 25, "avx2 fma avx512f"))  # 83.2 GFLOP/s
    assert at_least_measured(peak, 50.0) == peak
    raised = at_least_measured(peak, 100.0)
    assert raised["gflops"] == 100.0 and raised["ghz"] == pytest.approx(100 / 32)
