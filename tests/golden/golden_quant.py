"""Golden records for quantization (prefix "quant."): quantize_per_tensor /
per_channel, dequantize, and torch.ao.quantization.quantize_dynamic on an MLP.

Engine: qnnpack (torch.backends.quantized.engine). Its dynamic Linear uses the
full uint8 range for activations (reduce_range is ignored), as ember's default;
onednn / fbgemm use reduce_range=True (ember: DynamicQuantOptions::reduce_range).
"""
import torch


def cases(emit):
    torch.backends.quantized.engine = "qnnpack"
    g = torch.Generator().manual_seed(5)

    def rn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64).to(torch.float32)

    x = rn(7, 13) * 3
    emit.tensor("quant.per_tensor.x", x)
    for dt, scale, zp in ((torch.qint8, 0.0371, -5), (torch.quint8, 0.05, 128)):
        q = torch.quantize_per_tensor(x, scale, zp, dt)
        name = str(dt).replace("torch.", "")
        emit.tensor(f"quant.per_tensor.{name}.int_repr", q.int_repr())
        emit.tensor(f"quant.per_tensor.{name}.dequant", q.dequantize())

    xc = rn(4, 5, 6) * 2
    emit.tensor("quant.per_channel.x", xc)
    for axis in (0, 1, 2):
        c = xc.shape[axis]
        scales = torch.rand(c, generator=g, dtype=torch.float64) * 0.05 + 0.01
        zps = torch.randint(-10, 10, (c,), generator=g)
        q = torch.quantize_per_channel(xc, scales, zps, axis, torch.qint8)
        emit.tensor(f"quant.per_channel.axis{axis}.scales", scales)
        emit.tensor(f"quant.per_channel.axis{axis}.zero_points", zps)
        emit.tensor(f"quant.per_channel.axis{axis}.int_repr", q.int_repr())
        emit.tensor(f"quant.per_channel.axis{axis}.dequant", q.dequantize())

    # An MLP: Linear(37, 64) ReLU Linear(64, 10), quantize_dynamic per tensor and per channel.
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(37, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).eval()
    x = rn(9, 37) * 2 + 0.5
    emit.tensor("quant.mlp.x", x)
    emit.tensor("quant.mlp.w0", model[0].weight)
    emit.tensor("quant.mlp.b0", model[0].bias)
    emit.tensor("quant.mlp.w2", model[2].weight)
    emit.tensor("quant.mlp.b2", model[2].bias)
    emit.tensor("quant.mlp.fp32", model(x))
    qt = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    emit.tensor("quant.mlp.int8_per_tensor", qt(x))
    emit.tensor("quant.mlp.w0_int_repr", qt[0].weight().int_repr())
    emit.tensor("quant.mlp.w0_scale", torch.tensor([qt[0].weight().q_scale()]))
    qc = torch.ao.quantization.quantize_dynamic(
        model, {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig}, dtype=torch.qint8)
    emit.tensor("quant.mlp.int8_per_channel", qc(x))
    emit.tensor("quant.mlp.w0_pc_int_repr", qc[0].weight().int_repr())
    emit.tensor("quant.mlp.w0_pc_scales", qc[0].weight().q_per_channel_scales())
