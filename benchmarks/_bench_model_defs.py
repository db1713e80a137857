"""The models ``bench_models.py`` times, each written once over the library passed in
(``aiograd`` or ``torch``): the same ``nn`` code builds both, so their state dicts have the same
keys and one ``.npz`` of weights loads into either.

Each model is a :class:`ModelDef`: ``build(lib)`` returns the module, ``batches()`` a few
batches as numpy arrays (``(inputs, target)``, the model called as ``net(*inputs)``),
``loss(F, out, target)`` the training loss (``F`` is the library's ``nn.functional``) and
``optimizer(lib, params)`` the optimizer. Sizes are module constants below; the module docstring
of ``bench_models.py`` describes each model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Batch = tuple[tuple[np.ndarray, ...], np.ndarray]
N_BATCHES = 4  # distinct batches a worker cycles through

# CNN (8x8 digits)
CNN_BATCH = 64
# character transformer
TF_VOCAB, TF_SEQ, TF_WIDTH, TF_HEADS, TF_LAYERS, TF_BATCH = 65, 64, 128, 4, 2, 16
# ResNet-18
RN_BATCH, RN_SIZE, RN_CLASSES = 4, 64, 10
# U-Net
UN_BATCH, UN_SIZE, UN_BASE = 4, 64, 16
# BERT-style encoder
BERT_VOCAB, BERT_SEQ, BERT_WIDTH, BERT_HEADS, BERT_LAYERS, BERT_BATCH, BERT_CLASSES = (
    1000, 64, 256, 4, 2, 8, 2)
# GPT-2-style decoder
GPT_VOCAB, GPT_SEQ, GPT_WIDTH, GPT_HEADS, GPT_LAYERS, GPT_BATCH = 2048, 64, 128, 4, 2, 8
# LSTM
LSTM_IN, LSTM_HIDDEN, LSTM_LAYERS, LSTM_SEQ, LSTM_BATCH, LSTM_CLASSES = 64, 128, 2, 50, 32, 10


# --------------------------------------------------------------------------------- 1. CNN
def make_cnn(lib: Any) -> Any:
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 10),
    )


def cnn_batches() -> list[Batch]:
    rng = np.random.default_rng(0)
    return [((rng.uniform(0, 1, (CNN_BATCH, 1, 8, 8)).astype(np.float32),),
             rng.integers(0, 10, CNN_BATCH)) for _ in range(N_BATCHES)]


# ------------------------------------------------------------------- 2. character transformer
def make_transformer(lib: Any) -> Any:
    nn = lib.nn

    class CharTransformer(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.tokens = nn.Embedding(TF_VOCAB, TF_WIDTH)
            self.positions = nn.Embedding(TF_SEQ, TF_WIDTH)
            self.blocks = nn.ModuleList(
                nn.TransformerEncoderLayer(TF_WIDTH, TF_HEADS, 4 * TF_WIDTH, dropout=0.0,
                                           activation="relu", batch_first=True, norm_first=True)
                for _ in range(TF_LAYERS)
            )
            self.norm = nn.LayerNorm(TF_WIDTH)
            self.head = nn.Linear(TF_WIDTH, TF_VOCAB)
            # True above the diagonal: a position does not attend to later ones
            self.register_buffer(
                "causal", lib.tensor(np.triu(np.ones((TF_SEQ, TF_SEQ), bool), 1)), persistent=False)
            self.register_buffer("where", lib.arange(TF_SEQ), persistent=False)

        def forward(self, idx: Any) -> Any:
            h = self.tokens(idx) + self.positions(self.where)
            for block in self.blocks:
                h = block(h, src_mask=self.causal, is_causal=True)
            return self.head(self.norm(h))

    return CharTransformer()


def transformer_batches() -> list[Batch]:
    rng = np.random.default_rng(0)
    return [((rng.integers(0, TF_VOCAB, (TF_BATCH, TF_SEQ)),),
             rng.integers(0, TF_VOCAB, (TF_BATCH, TF_SEQ))) for _ in range(N_BATCHES)]


# --------------------------------------------------------------------------------- 3. ResNet-18
def make_resnet18(lib: Any) -> Any:
    """torchvision's ``resnet18(num_classes=10)``, written out as torchvision writes it."""
    nn = lib.nn

    class BasicBlock(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self, inplanes: int, planes: int, stride: int = 1,
                     downsample: Any = None) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = downsample

        def forward(self, x: Any) -> Any:
            identity = x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            if self.downsample is not None:
                identity = self.downsample(x)
            out += identity
            return self.relu(out)

    class ResNet18(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.inplanes = 64
            self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            self.layer1 = self._make_layer(64, 1)
            self.layer2 = self._make_layer(128, 2)
            self.layer3 = self._make_layer(256, 2)
            self.layer4 = self._make_layer(512, 2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, RN_CLASSES)

        def _make_layer(self, planes: int, stride: int) -> Any:
            downsample = None
            if stride != 1 or self.inplanes != planes:
                downsample = nn.Sequential(
                    nn.Conv2d(self.inplanes, planes, 1, stride=stride, bias=False),
                    nn.BatchNorm2d(planes))
            layers = [BasicBlock(self.inplanes, planes, stride, downsample),
                      BasicBlock(planes, planes)]
            self.inplanes = planes
            return nn.Sequential(*layers)

        def forward(self, x: Any) -> Any:
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(lib.flatten(self.avgpool(x), 1))

    return ResNet18()


def resnet18_batches() -> list[Batch]:
    rng = np.random.default_rng(0)
    return [((rng.standard_normal((RN_BATCH, 3, RN_SIZE, RN_SIZE)).astype(np.float32),),
             rng.integers(0, RN_CLASSES, RN_BATCH)) for _ in range(N_BATCHES)]


# ------------------------------------------------------------------------------------ 4. U-Net
def make_unet(lib: Any) -> Any:
    """Three levels (UN_BASE, 2x, 4x channels), Conv-BN-ReLU twice per level, max pooling down,
    bilinear upsampling (align_corners=False) up, skips concatenated; one logit per pixel."""
    nn = lib.nn
    b = UN_BASE

    def double_conv(i: int, o: int) -> Any:
        return nn.Sequential(
            nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True),
            nn.Conv2d(o, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True),
        )

    class UNet(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.inc = double_conv(1, b)
            self.down1 = nn.Sequential(nn.MaxPool2d(2), double_conv(b, 2 * b))
            self.down2 = nn.Sequential(nn.MaxPool2d(2), double_conv(2 * b, 4 * b))
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
            self.conv_up1 = double_conv(6 * b, 2 * b)
            self.conv_up2 = double_conv(3 * b, b)
            self.outc = nn.Conv2d(b, 1, kernel_size=1)

        def forward(self, x: Any) -> Any:
            x1 = self.inc(x)
            x2 = self.down1(x1)
            x3 = self.down2(x2)
            y = self.conv_up1(lib.cat([x2, self.up(x3)], dim=1))
            y = self.conv_up2(lib.cat([x1, self.up(y)], dim=1))
            return self.outc(y)

    return UNet()


def unet_batches() -> list[Batch]:
    rng = np.random.default_rng(0)
    out = []
    for _ in range(N_BATCHES):
        x = rng.standard_normal((UN_BATCH, 1, UN_SIZE, UN_SIZE)).astype(np.float32)
        # a mask the image determines: where a blurred copy of it is positive
        blur = (x + np.roll(x, 1, 2) + np.roll(x, -1, 2) + np.roll(x, 1, 3) + np.roll(x, -1, 3))
        out.append(((x,), (blur > 0).astype(np.float32)))
    return out


# ------------------------------------------------------------------------ 5. BERT-style encoder
def make_bert(lib: Any) -> Any:
    """BERT's embeddings (token + position + segment, LayerNorm), post-norm encoder layers with
    GELU, a tanh pooler on the first token and a linear classifier."""
    nn = lib.nn

    class Bert(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.word_embeddings = nn.Embedding(BERT_VOCAB, BERT_WIDTH, padding_idx=0)
            self.position_embeddings = nn.Embedding(BERT_SEQ, BERT_WIDTH)
            self.token_type_embeddings = nn.Embedding(2, BERT_WIDTH)
            self.emb_norm = nn.LayerNorm(BERT_WIDTH, eps=1e-12)
            self.layers = nn.ModuleList(
                nn.TransformerEncoderLayer(BERT_WIDTH, BERT_HEADS, 4 * BERT_WIDTH, dropout=0.0,
                                           activation="gelu", layer_norm_eps=1e-12,
                                           batch_first=True, norm_first=False)
                for _ in range(BERT_LAYERS)
            )
            self.pooler = nn.Linear(BERT_WIDTH, BERT_WIDTH)
            self.classifier = nn.Linear(BERT_WIDTH, BERT_CLASSES)
            self.register_buffer("position_ids", lib.arange(BERT_SEQ), persistent=False)

        def forward(self, ids: Any, segments: Any, padding: Any) -> Any:
            h = (self.word_embeddings(ids) + self.position_embeddings(self.position_ids)
                 + self.token_type_embeddings(segments))
            h = self.emb_norm(h)
            for layer in self.layers:
                h = layer(h, src_key_padding_mask=padding)
            return self.classifier(lib.tanh(self.pooler(h[:, 0])))

    return Bert()


def bert_batches() -> list[Batch]:
    rng = np.random.default_rng(0)
    out = []
    pos = np.arange(BERT_SEQ)
    for _ in range(N_BATCHES):
        lengths = rng.integers(BERT_SEQ // 4, BERT_SEQ + 1, BERT_BATCH)
        ids = rng.integers(1, BERT_VOCAB, (BERT_BATCH, BERT_SEQ))
        padding = pos[None, :] >= lengths[:, None]  # True where there is no token
        ids[padding] = 0
        segments = (pos[None, :] >= (lengths // 2)[:, None]).astype(np.int64)
        segments[padding] = 0
        out.append(((ids, segments, padding), rng.integers(0, BERT_CLASSES, BERT_BATCH)))
    return out


# --------------------------------------------------------------------- 6. GPT-2-style decoder
def make_gpt2(lib: Any) -> Any:
    """Hugging Face's GPT-2 written from primitives: Conv1D (weight (in, out), addmm), causal
    scaled-dot-product attention, gelu_new (tanh), pre-norm blocks, an lm head tied to wte."""
    nn = lib.nn
    F = nn.functional
    d, heads = GPT_WIDTH, GPT_HEADS

    class Conv1D(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self, nf: int, nx: int) -> None:
            super().__init__()
            self.nf = nf
            self.weight = nn.Parameter(lib.empty(nx, nf))
            self.bias = nn.Parameter(lib.zeros(nf))
            nn.init.normal_(self.weight, std=0.02)

        def forward(self, x: Any) -> Any:
            size_out = x.size()[:-1] + (self.nf,)
            x = lib.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
            return x.view(size_out)

    class Attention(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.c_attn = Conv1D(3 * d, d)
            self.c_proj = Conv1D(d, d)

        def _split(self, x: Any) -> Any:
            return x.view(x.size()[:-1] + (heads, d // heads)).permute(0, 2, 1, 3)

        def forward(self, x: Any) -> Any:
            q, k, v = self.c_attn(x).split(d, dim=2)
            a = F.scaled_dot_product_attention(self._split(q), self._split(k), self._split(v),
                                               is_causal=True)
            a = a.permute(0, 2, 1, 3).contiguous()
            return self.c_proj(a.view(a.size()[:-2] + (d,)))

    class MLP(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.c_fc = Conv1D(4 * d, d)
            self.c_proj = Conv1D(d, 4 * d)

        def forward(self, x: Any) -> Any:
            return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))

    class Block(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.ln_1 = nn.LayerNorm(d, eps=1e-5)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(d, eps=1e-5)
            self.mlp = MLP()

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT2(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(GPT_VOCAB, d)
            self.wpe = nn.Embedding(GPT_SEQ, d)
            self.h = nn.ModuleList([Block() for _ in range(GPT_LAYERS)])
            self.ln_f = nn.LayerNorm(d, eps=1e-5)
            nn.init.normal_(self.wte.weight, std=0.02)
            nn.init.normal_(self.wpe.weight, std=0.01)

        def forward(self, ids: Any) -> Any:
            pos = lib.arange(0, ids.size(-1), dtype=lib.long).unsqueeze(0)
            h = self.wte(ids) + self.wpe(pos)
            for block in self.h:
                h = block(h)
            return F.linear(self.ln_f(h), self.wte.weight)  # the lm head, tied to wte

    return GPT2()


def gpt2_batches() -> list[Batch]:
    rng = np.random.default_rng(0)
    out = []
    for _ in range(N_BATCHES):
        ids = rng.integers(0, GPT_VOCAB, (GPT_BATCH, GPT_SEQ + 1))
        out.append(((ids[:, :-1],), ids[:, 1:]))  # each position predicts the next token
    return out


# ------------------------------------------------------------------------------------- 7. LSTM
def make_lstm(lib: Any) -> Any:
    nn = lib.nn

    class LSTMClassifier(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(LSTM_IN, LSTM_HIDDEN, num_layers=LSTM_LAYERS, batch_first=True)
            self.head = nn.Linear(LSTM_HIDDEN, LSTM_CLASSES)

        def forward(self, x: Any) -> Any:
            out, _ = self.lstm(x)
            return self.head(out[:, -1])

    return LSTMClassifier()


def lstm_batches() -> list[Batch]:
    rng = np.random.default_rng(0)
    return [((rng.standard_normal((LSTM_BATCH, LSTM_SEQ, LSTM_IN)).astype(np.float32),),
             rng.integers(0, LSTM_CLASSES, LSTM_BATCH)) for _ in range(N_BATCHES)]


# ------------------------------------------------------------------------------------ registry
def cross_entropy(F: Any, out: Any, target: Any) -> Any:
    """Cross-entropy over every row (and every position, for per-token outputs)."""
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))


def bce_with_logits(F: Any, out: Any, target: Any) -> Any:
    return F.binary_cross_entropy_with_logits(out, target)


@dataclass(frozen=True)
class ModelDef:
    name: str
    build: Callable[[Any], Any]
    batches: Callable[[], list[Batch]]
    loss: Callable[[Any, Any, Any], Any]
    optimizer: str  # "SGD", "Adam" or "AdamW": the class in lib.optim
    lr: float
    steps: int  # default timed steps per worker
    warmup: int  # default untimed steps per worker
    opt_kwargs: dict[str, Any] = field(default_factory=dict)

    def make_optimizer(self, lib: Any, params: Any) -> Any:
        return getattr(lib.optim, self.optimizer)(params, lr=self.lr, **self.opt_kwargs)


MODELS: dict[str, ModelDef] = {
    m.name: m for m in (
        ModelDef("cnn", make_cnn, cnn_batches, cross_entropy, "Adam", 1e-3, steps=30, warmup=5),
        ModelDef("transformer", make_transformer, transformer_batches, cross_entropy, "AdamW",
                 3e-4, steps=10, warmup=3),
        ModelDef("resnet18", make_resnet18, resnet18_batches, cross_entropy, "SGD", 0.01,
                 steps=5, warmup=2, opt_kwargs={"momentum": 0.9, "weight_decay": 1e-4}),
        ModelDef("unet", make_unet, unet_batches, bce_with_logits, "Adam", 1e-3,
                 steps=10, warmup=3),
        ModelDef("bert", make_bert, bert_batches, cross_entropy, "AdamW", 1e-4,
                 steps=10, warmup=3, opt_kwargs={"weight_decay": 0.01}),
        ModelDef("gpt2", make_gpt2, gpt2_batches, cross_entropy, "AdamW", 3e-4,
                 steps=10, warmup=3, opt_kwargs={"weight_decay": 0.01}),
        ModelDef("lstm", make_lstm, lstm_batches, cross_entropy, "Adam", 1e-3,
                 steps=10, warmup=3),
    )
}

__all__ = ["MODELS", "N_BATCHES", "Batch", "ModelDef"]
