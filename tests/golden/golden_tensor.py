"""Golden records for creation, RNG streams and printing."""
import torch


def cases(emit):
    torch.manual_seed(0)
    emit.tensor("rng.rand_5", torch.rand(5))
    torch.manual_seed(42)
    emit.tensor("rng.rand_f64", torch.rand(7, dtype=torch.float64))
    torch.manual_seed(0)
    emit.tensor("rng.randn_5", torch.randn(5))
    torch.manual_seed(0)
    emit.tensor("rng.randn_37", torch.randn(37))
    torch.manual_seed(7)
    emit.tensor("rng.randn_4099", torch.randn(4099))  # 256 blocks of 16 and a redrawn tail
    torch.manual_seed(3)
    emit.tensor("rng.randn_f64_20", torch.randn(20, dtype=torch.float64))
    torch.manual_seed(0)
    emit.tensor("rng.randint_10", torch.randint(-5, 17, (10,)))
    emit.tensor("creation.linspace", torch.linspace(-1, 2.5, 7))
    emit.tensor("creation.linspace_1", torch.linspace(3, 7, 1))  # one step: [start]
    emit.tensor("creation.linspace_1_i64", torch.linspace(3, 7, 1, dtype=torch.int64))
    emit.tensor("creation.linspace_2", torch.linspace(3, 7, 2))
    emit.tensor("creation.arange_f", torch.arange(0.5, 3.0, 0.3))

    prints = {
        "f32_2x2": torch.tensor([[1., 2.], [3., 4.]]),
        "f32_frac": torch.tensor([0.1, -2.25, 3.14159]),
        "f32_sci": torch.tensor([1e-5, 1.0, 250.0]),
        "f32_bigint": torch.tensor([1.0, 2e9]),
        "f32_nan": torch.tensor([float("nan"), 1.5, float("inf"), -float("inf")]),
        "f32_zeros": torch.zeros(3),
        "i64": torch.tensor([1, -20, 300]),
        "i32": torch.tensor([[1, 2], [3, 4]], dtype=torch.int32),
        "bool": torch.tensor([True, False, True]),
        "f16": torch.tensor([0.5, 1.25], dtype=torch.float16),
        "bf16": torch.tensor([1.0, 2.0], dtype=torch.bfloat16),
        "f64": torch.tensor([1.5, 2.0], dtype=torch.float64),
        "u8": torch.tensor([0, 255], dtype=torch.uint8),
        "scalar_f": torch.tensor(3.0),
        "scalar_i": torch.tensor(7),
        "scalar_frac": torch.tensor(-0.5),
        "empty": torch.zeros(0),
        "empty_2d": torch.zeros(0, 3),
        "empty_i64": torch.zeros(2, 0, dtype=torch.int64),
        "arange_30": torch.arange(30.0),
        "big_2000": torch.arange(2000).reshape(40, 50),
        "big_1d": torch.arange(1500.0) / 7,
        "three_d": torch.arange(24).reshape(2, 3, 4),
        "wide": torch.arange(100.0).reshape(4, 25) * 1.5,
        "wide_f16": torch.arange(40.0, dtype=torch.float16) / 3,
    }
    for name, t in prints.items():
        emit.text("print." + name, str(t))
