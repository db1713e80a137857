"""Five small models of five architecture families, each written once as a model file is, with
the library passed in: ``torch`` itself, or ``aiograd`` under torch's name (what a port with
``import aiograd as torch`` amounts to). ``tests/test_model_families.py`` loads torch's weights
into aiograd's copy and compares outputs and gradients.

Each ``build_*(torch)`` returns ``(model, step)``: ``step(model, inputs)`` runs the forward pass
and returns ``(loss, outputs)`` with ``outputs`` a dict of tensors to compare; the caller runs
``loss.backward()`` (``await loss.backward()`` for aiograd)."""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any


# ----------------------------------------------------------------------- 1. GPT-2 style decoder
def build_gpt2(torch: ModuleType, *, vocab: int = 11, n_pos: int = 8, d: int = 12,
               heads: int = 3, layers: int = 2) -> tuple[Any, Any]:
    nn = torch.nn
    F = nn.functional

    class Conv1D(nn.Module):
        """Hugging Face's Conv1D: a Linear with its weight transposed, (nx, nf)."""

        def __init__(self, nf: int, nx: int) -> None:
            super().__init__()
            self.nf = nf
            self.weight = nn.Parameter(torch.empty(nx, nf))
            self.bias = nn.Parameter(torch.zeros(nf))
            nn.init.normal_(self.weight, std=0.02)

        def forward(self, x):
            size_out = x.size()[:-1] + (self.nf,)
            x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
            return x.view(size_out)

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer(
                "bias",
                torch.tril(torch.ones((n_pos, n_pos), dtype=torch.bool)).view(1, 1, n_pos, n_pos),
                persistent=False,
            )
            self.c_attn = Conv1D(3 * d, d)
            self.c_proj = Conv1D(d, d)

        def _split(self, x):
            return x.view(x.size()[:-1] + (heads, d // heads)).permute(0, 2, 1, 3)

        def forward(self, x):
            q, k, v = self.c_attn(x).split(d, dim=2)
            q, k, v = self._split(q), self._split(k), self._split(v)
            w = torch.matmul(q, k.transpose(-1, -2))
            w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype, device=w.device)
            t = q.size(-2)
            causal = self.bias[:, :, :t, :t]
            w = w.masked_fill(~causal, torch.finfo(w.dtype).min)
            w = nn.functional.softmax(w, dim=-1)
            a = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous()
            return self.c_proj(a.view(a.size()[:-2] + (d,)))

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c_fc = Conv1D(4 * d, d)
            self.c_proj = Conv1D(d, 4 * d)

        def forward(self, x):
            return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1 = nn.LayerNorm(d, eps=1e-5)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(d, eps=1e-5)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT2(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(vocab, d)
            self.wpe = nn.Embedding(n_pos, d)
            self.h = nn.ModuleList([Block() for _ in range(layers)])
            self.ln_f = nn.LayerNorm(d)

        def forward(self, ids):
            pos = torch.arange(0, ids.size(-1), dtype=torch.long).unsqueeze(0)
            h = self.wte(ids) + self.wpe(pos)
            for block in self.h:
                h = block(h)
            return F.linear(self.ln_f(h), self.wte.weight)  # the lm head, tied to wte

    def step(model, inputs):
        ids = inputs["ids"]
        logits = model(ids)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, vocab), ids[:, 1:].reshape(-1))
        return loss, {"logits": logits}

    return GPT2(), step


# ------------------------------------------------------------------------------------ 2. U-Net
def build_unet(torch: ModuleType, *, c_in: int = 3, base: int = 4, classes: int = 2) -> tuple[Any, Any]:
    nn = torch.nn
    F = nn.functional

    def double_conv(i: int, o: int):
        return nn.Sequential(
            nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True),
            nn.Conv2d(o, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True),
        )

    class UNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inc = double_conv(c_in, base)
            self.down1 = nn.Sequential(nn.MaxPool2d(2), double_conv(base, 2 * base))
            self.down2 = nn.Sequential(nn.MaxPool2d(2), double_conv(2 * base, 4 * base))
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            self.conv_up1 = double_conv(6 * base, 2 * base)
            self.conv_up2 = double_conv(3 * base, base)
            self.outc = nn.Conv2d(base, classes, kernel_size=1)

        def forward(self, x):
            x1 = self.inc(x)
            x2 = self.down1(x1)
            x3 = self.down2(x2)
            y = self.conv_up1(torch.cat([x2, self.up(x3)], dim=1))
            y = F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=True)
            y = self.conv_up2(torch.cat([x1, y], dim=1))
            return self.outc(y)

    def step(model, inputs):
        logits = model(inputs["x"])
        loss = F.cross_entropy(logits, inputs["target"])
        return loss, {"logits": logits}

    return UNet(), step


# ------------------------------------------------------------------------- 3. BiLSTM classifier
def build_lstm(torch: ModuleType, *, vocab: int = 13, emb: int = 6, hidden: int = 5,
               classes: int = 3) -> tuple[Any, Any]:
    nn = torch.nn
    F = nn.functional
    rnn_utils = nn.utils.rnn

    class Classifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(vocab, emb, padding_idx=0)
            self.lstm = nn.LSTM(emb, hidden, num_layers=2, bidirectional=True,
                                batch_first=True, dropout=0.0)
            self.fc = nn.Linear(2 * hidden, classes)

        def forward(self, ids, lengths):
            packed = rnn_utils.pack_padded_sequence(self.emb(ids), lengths, batch_first=True,
                                                    enforce_sorted=False)
            out, (h_n, _c_n) = self.lstm(packed)
            padded, out_lengths = rnn_utils.pad_packed_sequence(out, batch_first=True)
            last = torch.cat([h_n[-2], h_n[-1]], dim=1)  # the top layer, forward and backward
            mean = padded.sum(dim=1) / out_lengths.to(padded.dtype).unsqueeze(1)
            return self.fc(last), padded, mean

    def step(model, inputs):
        logits, padded, mean = model(inputs["ids"], inputs["lengths"])
        loss = F.cross_entropy(logits, inputs["target"]) + (mean ** 2).mean()
        return loss, {"logits": logits, "padded": padded, "mean": mean}

    return Classifier(), step


# ------------------------------------------------------------- 4. encoder-decoder Transformer
def build_transformer(torch: ModuleType, *, vocab: int = 10, d: int = 16) -> tuple[Any, Any]:
    nn = torch.nn
    F = nn.functional

    class Seq2Seq(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.src_emb = nn.Embedding(vocab, d)
            self.tgt_emb = nn.Embedding(vocab, d)
            self.transformer = nn.Transformer(
                d_model=d, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                dim_feedforward=32, dropout=0.0, batch_first=True)
            self.out = nn.Linear(d, vocab)

        def forward(self, src, tgt, src_pad, tgt_pad):
            tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
            h = self.transformer(
                self.src_emb(src) * math.sqrt(d), self.tgt_emb(tgt) * math.sqrt(d),
                tgt_mask=tgt_mask, src_key_padding_mask=src_pad,
                tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
            return self.out(h)

    def step(model, inputs):
        src, tgt = inputs["src"], inputs["tgt"]
        src_pad, tgt_pad = src == 0, tgt == 0
        logits = model(src, tgt[:, :-1], src_pad, tgt_pad[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, vocab), tgt[:, 1:].reshape(-1), ignore_index=0)
        return loss, {"logits": logits}

    return Seq2Seq(), step


# --------------------------------------------------------------------------------------- 5. VAE
def build_vae(torch: ModuleType, *, n_in: int = 12, n_hidden: int = 10, n_z: int = 3) -> tuple[Any, Any]:
    nn = torch.nn
    F = nn.functional
    Normal = torch.distributions.Normal
    kl_divergence = torch.distributions.kl_divergence

    class VAE(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(n_in, n_hidden), nn.Tanh())
            self.mu = nn.Linear(n_hidden, n_z)
            self.logvar = nn.Linear(n_hidden, n_z)
            self.dec = nn.Sequential(nn.Linear(n_z, n_hidden), nn.ReLU(), nn.Linear(n_hidden, n_in))

        def forward(self, x, seed):
            h = self.enc(x)
            mu, logvar = self.mu(h), self.logvar(h)
            q = Normal(mu, torch.exp(0.5 * logvar))
            torch.manual_seed(seed)
            z = q.rsample()
            return self.dec(z), q, z

    def step(model, inputs):
        x = inputs["x"]
        logits, q, z = model(x, inputs["seed"])
        bce = F.binary_cross_entropy_with_logits(logits, inputs["target"], reduction="sum")
        kl = kl_divergence(q, Normal(0.0, 1.0)).sum()
        loss = (bce + kl) / x.size(0)
        return loss, {"logits": logits, "z": z, "kl": kl}

    return VAE(), step


FAMILIES = {
    "gpt2": build_gpt2,
    "unet": build_unet,
    "bilstm": build_lstm,
    "transformer": build_transformer,
    "vae": build_vae,
}
