"""End-to-end tests of the JAX adapter (kernels/jax/) through the real HTTP protocol.

Run with the adapter venv's python: .venv/jax-new/bin/python tests/e2e/jax_adapter_test.py
Each test class starts the adapter as a child on port 0 and reads its LISTENING line. The
bulk runs in the generic interpreter (hlo mode, fast); TPU interpret mode runs one small
case per Pallas kernel. Every output is checked against the fp64 oracle (oracle.py) with
the harness's tolerance rule, and every convention mapping on a case where the wrong
convention would be far outside that tolerance.
"""
import argparse
import gzip
import io
import os
import socket
import sys
import tarfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jax_adapter_support import (Adapter, make_case, make_tensors, max_error, reference,  # noqa: E402
                                 tolerance)

KERNELS = ("jax-xla", "pallas-flash", "pallas-splash")
TOKEN = "s3cret-token"
ALL = KERNELS
XLA_SPLASH = ("jax-xla", "pallas-splash")

# (label, case, kernels expected to support it, wrong-convention oracle overrides that
#  the check must be able to tell apart, tensor options)
MAPPING_CASES = [
    ("scale", make_case(seq_q=256, head_dim=64, scale=0.3), ALL, {"scale": 1.0}, {}),
    ("bias after scale (flash: ab = bias / scale)",
     make_case(seq_q=128, bias_shape=[1, 2, 128, 128], scale=0.3), ("jax-xla", "pallas-flash"),
     None, {"bias_amplitude": 4.0, "wrong_bias_scale": 0.3}),
    ("broadcast bias", make_case(batch=2, seq_q=128, bias_shape=[1, 2, 1, 128]), ("jax-xla", "pallas-flash"),
     None, {"bias_amplitude": 4.0}),
    ("causal bottom-right Sq < Sk", make_case(seq_q=128, seq_k=384, causal=True), XLA_SPLASH,
     {"causal_alignment": "top_left"}, {}),
    ("causal top-left Sq > Sk", make_case(seq_q=256, seq_k=128, causal=True, causal_alignment="top_left"), ALL,
     {"causal_alignment": "bottom_right"}, {}),
    ("causal square S=256 (flash multi-step)", make_case(seq_q=256, causal=True), ALL, {"causal": False}, {}),
    ("window bidirectional", make_case(seq_q=256, window=[32, 16]), XLA_SPLASH, {"window": [-1, -1]}, {}),
    ("window + causal, bottom-right Sq < Sk", make_case(seq_q=128, seq_k=256, window=[40, -1], causal=True),
     XLA_SPLASH, {"causal_alignment": "top_left"}, {}),
    ("window top-left Sq < Sk", make_case(seq_q=128, seq_k=256, window=[20, 30], causal_alignment="top_left"),
     XLA_SPLASH, {"causal_alignment": "bottom_right"}, {}),
    ("GQA 8q/2kv bf16 (D=64: scale 1/8 exact)",
     make_case(seq_q=256, heads_q=8, heads_kv=2, head_dim=64, dtype="bf16", causal=True), XLA_SPLASH,
     None, {"wrong_gqa": True}),
    ("MQA 4q/1kv (make_splash_mqa)", make_case(seq_q=128, heads_q=4, heads_kv=1), XLA_SPLASH, None, {}),
    ("soft-cap", make_case(seq_q=128, softcap=5.0), ("pallas-splash",), {"softcap": 0.0}, {"amplitude": 4.0}),
    ("segment ids + causal", make_case(batch=2, seq_q=256, causal=True, segment_ids=True), ALL,
     None, {"wrong_segments": True}),
    ("segment ids Sq != Sk", make_case(seq_q=128, seq_k=256, segment_ids=True), ALL,
     None, {"wrong_segments": True}),
    ("head_dim_v != head_dim", make_case(seq_q=128, head_dim_v=16), ("pallas-splash",), None, {}),
    ("bf16 D=128 power-of-two scale", make_case(seq_q=128, head_dim=128, dtype="bf16", scale=0.0625), ALL,
     None, {}),
]


def dpa_ignores_lone_window():
    """jax < 0.8: dot_product_attention drops local_window_size when no mask, causal flag
    or sequence lengths come with it (an early return in _apply_masks). The adapter does
    not work around it: the gate is there to catch it."""
    import jax
    return tuple(int(x) for x in jax.__version__.split(".")[:2]) < (0, 8)


def lone_window(case):
    """Whether the adapter passes local_window_size to dot_product_attention alone."""
    off = 0 if case["causal_alignment"] == "top_left" else case["seq_k"] - case["seq_q"]
    windowed = case["window"] != [-1, -1] or (case["causal"] and off != 0)
    return windowed and not (case["causal"] and off == 0) and not case["segment_ids"]


def wrong_reference(case, t, overrides, opts):
    """The output under a convention the adapter must NOT have used."""
    t2 = dict(t)
    if opts.get("wrong_bias_scale"):
        t2["bias"] = t["bias"] * opts["wrong_bias_scale"]  # bias added before scaling
    if opts.get("wrong_gqa"):  # query head h reading kv head h % KV instead of h // (Hq / KV)
        order = [h % case["heads_kv"] for h in range(case["heads_q"])]
        t2["k"], t2["v"] = t["k"][:, :, order], t["v"][:, :, order]
        case = dict(case, heads_kv=case["heads_q"])
    if opts.get("wrong_segments"):
        t2 = {n: x for n, x in t2.items() if not n.startswith("segment_ids")}
    return reference(case, t2, **(overrides or {}))


class HloAdapterTest(unittest.TestCase):
    """Protocol, mappings and errors, on the generic interpreter (fast)."""

    @classmethod
    def setUpClass(cls):
        cls.adapter = Adapter("--interpret", "hlo", "--token-env", "JAX_ADAPTER_TEST_TOKEN", "--max-body-mb", "2",
                              env={"JAX_ADAPTER_TEST_TOKEN": TOKEN})
        cls.adapter.token = TOKEN

    @classmethod
    def tearDownClass(cls):
        rc = cls.adapter.shutdown()
        assert rc == 0, f"adapter exit code {rc} after /v1/shutdown"

    def run_case(self, kernel, case, t, prefix="c"):
        names = self.adapter.upload(prefix, t)
        reply = self.adapter.call("run", kernel, case, names, output=f"{prefix}.out")
        out = self.adapter.get_tensor(f"{prefix}.out") if reply.get("ok") else None
        return reply, out

    def test_hello_and_fingerprint(self):
        import jax
        status, hello = self.adapter.request("GET", "/v1/hello")
        self.assertEqual(status, 200)
        self.assertEqual(hello["protocol"], 1)
        self.assertEqual(hello["adapter"], "attngate-jax")
        fp = hello["fingerprint"]
        for key in ("python", "jax", "jaxlib", "libtpu", "numpy", "backend", "device_kind", "interpret_mode",
                    "platform"):
            self.assertIn(key, fp)
            self.assertTrue(fp[key] is None or isinstance(fp[key], str), key)
        self.assertEqual(fp["jax"], jax.__version__)
        self.assertEqual(fp["interpret_mode"], "hlo")
        self.assertEqual(fp["backend"], "cpu")

    def test_kernels(self):
        status, reply = self.adapter.request("GET", "/v1/kernels")
        self.assertEqual(status, 200)
        kernels = {k["name"]: k for k in reply["kernels"]}
        self.assertEqual(set(kernels), set(KERNELS) | {"pallas-paged", "pallas-ragged-paged", "xla-paged"})
        self.assertIn("generic Pallas interpreter", kernels["pallas-flash"]["description"])
        self.assertIn("hlo", kernels["jax-xla"]["description"])
        self.assertEqual(set(kernels["pallas-flash"]["features"]), {"causal", "segment_ids", "bias", "f32", "bf16"})
        self.assertIn("softcap", kernels["pallas-splash"]["features"])
        self.assertIn("window", kernels["jax-xla"]["features"])
        self.assertEqual(reply["errors"], [])
        for k in kernels.values():  # declarations in the kernel API's vocabulary (checked by attngate conform)
            self.assertEqual(k["package"], "attngate-jax")
            self.assertIn(k["conventions"]["causal_alignment"], ("case", "top_left", "bottom_right"))
            self.assertIn(k["conventions"]["fully_masked_row"], ("zeros", "mean_of_v", "nan"))
        self.assertEqual(kernels["pallas-flash"]["conventions"]["causal_alignment"], "top_left")
        self.assertEqual(kernels["pallas-flash"]["conventions"]["masked_nan_leaks"], ["k", "v"])

    def test_conformance_requests_skip_only_the_declared_refusals(self):
        bottom_right = make_case(seq_q=128, seq_k=256, causal=True)
        ask = lambda kernel, case, **kw: self.adapter.request("POST", "/v1/supports", {"kernel": kernel, "case": case, **kw})[1]
        self.assertIn("causal alignment is top-left", ask("pallas-flash", bottom_right)["reason"])
        self.assertEqual(ask("pallas-flash", bottom_right, conformance=True), {"supported": True})
        empty_rows = make_case(seq_q=256, seq_k=128, causal=True)
        self.assertIn("has no allowed key", ask("jax-xla", empty_rows)["reason"])
        self.assertEqual(ask("jax-xla", empty_rows, conformance=True), {"supported": True})
        # The kernel's own refusals and missing features stay.
        self.assertIn("does not declare the gqa feature", ask("pallas-flash", make_case(heads_q=4, heads_kv=2), conformance=True)["reason"])
        self.assertIn("block_q 128", ask("pallas-flash", make_case(seq_q=64, seq_k=128), conformance=True)["reason"])
        status, reply = self.adapter.request("POST", "/v1/supports", {"kernel": "jax-xla", "case": make_case(), "conformance": 1})
        self.assertEqual(status, 400)
        self.assertIn("conformance", reply["error"])
        # A run in conformance mode computes what the kernel does: jax-xla's mean of V in rows
        # that segment ids leave without a key (a mask: honoured by jax 0.7.2 too), which a
        # plain run declines.
        case = make_case(seq_q=128, segment_ids=True)
        t = make_tensors(case)
        t["segment_ids_q"][0, :10] = 99
        names = self.adapter.upload("cf", t)
        plain = self.adapter.call("run", "jax-xla", case, names, output="cf.out")
        self.assertIn("has no allowed key", plain.get("unsupported", ""), plain)
        reply = self.adapter.call("run", "jax-xla", case, names, output="cf.out", conformance=True)
        self.assertTrue(reply["ok"], reply)
        out = self.adapter.get_tensor("cf.out")
        np.testing.assert_allclose(out[0, :10], np.broadcast_to(t["v"].mean(axis=1), (10, 2, 32)), atol=1e-6)

    def test_supports_reasons(self):
        cases = [
            ("pallas-flash", make_case(heads_q=4, heads_kv=2), "GQA"),
            ("pallas-flash", make_case(softcap=10.0), "soft-cap"),
            ("pallas-flash", make_case(seq_q=256, window=[8, 8]), "window"),
            ("pallas-flash", make_case(seq_q=128, seq_k=256, causal=True), "causal alignment is top-left"),
            ("pallas-flash", make_case(head_dim=192), "head_dim 192"),
            ("pallas-flash", make_case(seq_q=64, seq_k=128), "block_q 128"),
            ("pallas-flash", make_case(seq_q=128, seq_k=200), "seq_k 200"),
            ("pallas-splash", make_case(bias_shape=[1, 1, 1, 128]), "bias"),
            ("pallas-splash", make_case(head_dim=128, dtype="bf16"), "not a power of two"),
            ("pallas-splash", make_case(seq_q=200), "seq_q 200"),
            ("jax-xla", make_case(softcap=10.0), "soft-cap"),
            ("jax-xla", make_case(head_dim_v=16), "head_dim_v"),
        ]
        for kernel in KERNELS:  # Sq > Sk bottom-right causal: the first rows see no key
            cases.append((kernel, make_case(seq_q=256, seq_k=128, causal=True), None))
        for kernel, case, words in cases:
            status, reply = self.adapter.request("POST", "/v1/supports", {"kernel": kernel, "case": case})
            self.assertEqual(status, 200)
            self.assertFalse(reply["supported"], (kernel, case))
            if words is None:
                if kernel != "pallas-flash":
                    self.assertIn("has no allowed key", reply["reason"])
            else:
                self.assertIn(words, reply["reason"], kernel)
        for kernel in KERNELS:
            status, reply = self.adapter.request("POST", "/v1/supports", {"kernel": kernel, "case": make_case()})
            self.assertEqual(reply, {"supported": True}, kernel)
        status, reply = self.adapter.request("POST", "/v1/supports", {"kernel": "nope", "case": make_case()})
        self.assertEqual(status, 404)
        self.assertIn("unknown kernel", reply["error"])
        status, reply = self.adapter.request("POST", "/v1/supports", {"kernel": "jax-xla", "case": {"batch": 1}})
        self.assertEqual(status, 400)

    def test_mappings_against_oracle(self):
        for label, case, supported, overrides, opts in MAPPING_CASES:
            tensor_opts = {k: v for k, v in opts.items() if k in ("amplitude", "bias_amplitude")}
            t = make_tensors(case, seed=len(label), **tensor_opts)
            golden = reference(case, t)
            tol = tolerance(case, golden, t)
            if overrides is not None or any(k.startswith("wrong_") for k in opts):
                wrong = wrong_reference(case, t, overrides, opts)
                self.assertGreater(max_error(wrong, golden), 20 * tol, f"{label}: the case cannot tell conventions apart")
            for kernel in KERNELS:
                with self.subTest(case=label, kernel=kernel):
                    reply, out = self.run_case(kernel, case, t)
                    if kernel not in supported:
                        self.assertIn("unsupported", reply, reply)
                        continue
                    self.assertTrue(reply["ok"], reply)
                    self.assertEqual(reply["output"]["shape"], list(golden.shape))
                    if kernel == "jax-xla" and lone_window(case) and dpa_ignores_lone_window():
                        self.assertGreater(max_error(out, golden), 20 * tol, "the known window bug of jax < 0.8")
                        continue
                    self.assertLessEqual(max_error(out, golden), tol, f"{label} {kernel}")

    def test_runtime_unsupported_from_tensors(self):
        # Segment ids that leave query rows without a key in their segment.
        case = make_case(seq_q=128, seq_k=128, segment_ids=True)
        t = make_tensors(case)
        t["segment_ids_q"][0, :10] = 99
        for kernel in KERNELS:
            reply, _ = self.run_case(kernel, case, t)
            self.assertIn("has no allowed key", reply.get("unsupported", ""), (kernel, reply))
        # A NaN in v at a key that causal rows mask: every kernel multiplies 0 by it.
        case = make_case(seq_q=256, causal=True)
        t = make_tensors(case)
        t["v"][0, 200, 1, 3] = np.nan
        for kernel in KERNELS:
            reply, _ = self.run_case(kernel, case, t)
            self.assertIn("NaN in v at key 200", reply.get("unsupported", ""), (kernel, reply))
        # A NaN in k at a masked key: flash adds the mask value to NaN, the others replace the score.
        t = make_tensors(case)
        t["k"][0, 200, 0, 5] = np.nan
        golden = reference(case, t)
        for kernel in KERNELS:
            reply, out = self.run_case(kernel, case, t)
            if kernel == "pallas-flash":
                self.assertIn("NaN in k", reply.get("unsupported", ""))
            else:
                self.assertTrue(reply["ok"], reply)
                self.assertLessEqual(max_error(out, golden), tolerance(case, golden, t), kernel)
        # A NaN in q reaches only its own row, in every kernel, as attngate says.
        t = make_tensors(case)
        t["q"][0, 7, 1, 0] = np.nan
        golden = reference(case, t)
        for kernel in KERNELS:
            reply, out = self.run_case(kernel, case, t)
            self.assertTrue(reply["ok"], reply)
            self.assertLessEqual(max_error(out, golden), tolerance(case, golden, t), kernel)

    def test_time_and_memory_shapes(self):
        case = make_case(seq_q=128)
        names = self.adapter.upload("tm", make_tensors(case))
        for kernel in KERNELS:
            reply = self.adapter.call("time", kernel, case, names, warmup=1, repetitions=4, min_time_s=0.002)
            self.assertTrue(reply["ok"], reply)
            self.assertEqual(len(reply["samples_s"]), 4)
            self.assertTrue(all(s > 0 for s in reply["samples_s"]))
            self.assertIn("compile_s", reply)
            again = self.adapter.call("time", kernel, case, names, warmup=0, repetitions=2, min_time_s=0.0)
            self.assertIsNone(again["compile_s"], "compiled once per case configuration and process")
            mem = self.adapter.call("memory", kernel, case, names, warmup_calls=1, calls=5)
            self.assertTrue(mem["ok"], mem)
            self.assertEqual(mem["source"], "rss")
            for key in ("live_arrays", "live_array_bytes", "rss_bytes"):
                self.assertEqual(len(mem[key]), 5, key)
            self.assertIsNone(mem["device_bytes_in_use"])
            self.assertEqual(len(set(mem["live_arrays"])), 1, f"{kernel}: live arrays grew: {mem['live_arrays']}")
            self.assertGreater(mem["peak_rss_bytes"], 0)
        run = self.adapter.call("run", "jax-xla", case, names, output="tm.out")
        self.assertGreater(run["compile_s"], 0)
        self.assertGreater(run["run_s"], 0)

    def test_kernel_error_is_data(self):
        # A bf16 tensor that is not bf16-exact breaks the protocol: 400.
        case = make_case(dtype="bf16", head_dim=64)
        t = make_tensors(case)
        t["q"][0, 0, 0, 0] = 1.0 + 2.0 ** -20
        names = self.adapter.upload("bad", t)
        status, reply = self.adapter.request("POST", "/v1/run", {"kernel": "jax-xla", "case": case,
                                                                 "inputs": names, "output": "x"})
        self.assertEqual(status, 400)
        self.assertIn("bf16-exact", reply["error"])
        # Shapes that disagree with the case: 400; an unknown tensor: 404.
        status, reply = self.adapter.request("POST", "/v1/run", {"kernel": "jax-xla", "case": make_case(seq_q=64),
                                                                 "inputs": names, "output": "x"})
        self.assertEqual(status, 400)
        self.assertIn("expected float32 [1, 64, 2, 32]", reply["error"])
        status, reply = self.adapter.request("POST", "/v1/run", {"kernel": "jax-xla", "case": case,
                                                                 "inputs": dict(names, q="missing"), "output": "x"})
        self.assertEqual(status, 404)

    def test_malformed_npy_is_400(self):
        good = io.BytesIO()
        np.save(good, np.zeros((2, 3), np.float32))
        good = good.getvalue()
        header_end = good.index(b"\n") + 1
        bad = {
            "bad magic": b"NOTNPY" + good[6:],
            "header past the body": good[:8] + (60000).to_bytes(2, "little") + good[10:],
            "shape vs data": good[:-4],
            "huge shape, tiny body": good[:10] + good[10:header_end].replace(b"(2, 3)", b"(99999999999, 9)"),
            "float64": good.replace(b"'<f4'", b"'<f8'"),
            "fortran order": good.replace(b"False", b"True "),
            "header not a dict": good[:10] + b"[1, 2, 3]".ljust(header_end - 11) + b"\n" + good[header_end:],
        }
        for what, body in bad.items():
            status, reply = self.adapter.request("PUT", "/v1/tensors/bad", body)
            self.assertEqual(status, 400, what)
            self.assertIn("error", reply)
        status, reply = self.adapter.request("PUT", "/v1/tensors/bad", good)
        self.assertEqual(status, 201)
        self.assertEqual(reply, {"name": "bad", "shape": [2, 3], "dtype": "float32", "bytes": 24})
        self.assertEqual(self.adapter.request("PUT", "/v1/tensors/no%20good", good)[0], 400)
        self.assertEqual(self.adapter.request("DELETE", "/v1/tensors/bad")[0], 204)
        self.assertEqual(self.adapter.request("GET", "/v1/tensors/bad")[0], 404)

    def test_paged_case_tensors_and_tables(self):
        # Two decode sequences (kv_lens 5 and 12, pages of 4) over a pool of 6 pages; the
        # slots past kv_len and the unused page are NaN, as the harness sends them.
        rng = np.random.default_rng(7)
        case = make_case(batch=2, seq_q=2, seq_k=12, heads_q=2, heads_kv=1, head_dim=8, causal=True)
        case["paged"] = {"q_lens": [1, 1], "kv_lens": [5, 12], "page_size": 4, "pages": 6, "pages_per_seq": 3}
        table = np.array([[4, 1, 5], [0, 3, 2]], np.int32)  # page 5: padding, unused
        k = rng.uniform(-1, 1, (6, 4, 1, 8)).astype(np.float32)
        v = rng.uniform(-1, 1, (6, 4, 1, 8)).astype(np.float32)
        k[1, 1:], v[1, 1:], k[5], v[5] = np.nan, np.nan, np.nan, np.nan
        t = {"q": rng.uniform(-1, 1, (2, 2, 8)).astype(np.float32), "k_pages": k, "v_pages": v, "page_table": table,
             "kv_lens": np.array([5, 12], np.int32), "cu_q_lens": np.array([0, 1, 2], np.int32)}
        reply, out = self.run_case("xla-paged", case, t, prefix="pg")
        self.assertTrue(reply["ok"], reply)
        self.assertEqual(out.shape, (2, 2, 8))  # [total_q, Hq, Dv]
        for b, pages, n in ((0, [4, 1], 5), (1, [0, 3, 2], 12)):
            keys, vals = k[pages].reshape(-1, 8)[:n], v[pages].reshape(-1, 8)[:n]
            for h in range(2):
                s = keys.astype(np.float64) @ t["q"][b, h] * case["scale"]
                w = np.exp(s - s.max())
                self.assertLess(np.abs(out[b, h] - (w / w.sum()) @ vals).max(), 1e-5)
        for role, bad, words in (("kv_lens", np.array([5, 11], np.int32), "inputs.kv_lens: [5, 11]"),
                                 ("page_table", np.array([[4, 1, 5], [0, 9, 2]], np.int32), "inputs.page_table[1]")):
            names = self.adapter.upload("pgbad", dict(t, **{role: bad}))
            status, reply = self.adapter.request("POST", "/v1/run", {"kernel": "xla-paged", "case": case, "inputs": names,
                                                                     "output": "x"})
            self.assertEqual(status, 400, role)
            self.assertIn(words, reply["error"])
        over = dict(case, paged=dict(case["paged"], q_lens=[6, 1]), seq_q=7)
        status, reply = self.adapter.request("POST", "/v1/supports", {"kernel": "xla-paged", "case": over})
        self.assertEqual(status, 400)
        self.assertIn("case.paged.q_lens[0]: 6 queries over 5 keys", reply["error"])
        status, reply = self.adapter.request("POST", "/v1/supports", {"kernel": "jax-xla", "case": case})
        self.assertEqual(reply["supported"], False)  # a kernel without the feature never sees a paged case
        self.assertIn("does not declare the paged_kv feature", reply["reason"])

    def test_token_and_body_limit(self):
        self.assertEqual(self.adapter.request("GET", "/v1/hello", token=False)[0], 401)
        status, reply = self.adapter.request("GET", "/v1/hello", headers={"Authorization": "Bearer wrong"})
        self.assertEqual(status, 401)
        self.assertNotIn(TOKEN, str(reply))
        big = io.BytesIO()
        np.save(big, np.zeros((1024, 1024), np.float32))  # 4 MiB, over --max-body-mb 2
        status, reply = self.adapter.request("PUT", "/v1/tensors/big", big.getvalue())
        self.assertEqual(status, 413)
        self.assertIn("limit", reply["error"])
        # As libcurl sends a large body: Expect: 100-continue gets the 413 before any body byte.
        with socket.create_connection((self.adapter.host, self.adapter.port), timeout=30) as sock:
            sock.sendall(f"PUT /v1/tensors/big HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                         f"Content-Length: {8 << 20}\r\nExpect: 100-continue\r\n\r\n".encode())
            self.assertTrue(sock.recv(4096).startswith(b"HTTP/1.1 413"))
        self.assertEqual(self.adapter.request("GET", "/v1/hello")[0], 200, "the adapter still serves")
        self.assertEqual(self.adapter.request("GET", "/v1/nothing")[0], 404)

    def test_profile_archive(self):
        case = make_case(seq_q=128)
        names = self.adapter.upload("pr", make_tensors(case))
        reply = self.adapter.call("profile", "pallas-flash", case, names)
        self.assertTrue(reply["ok"], reply)
        status, data = self.adapter.request("GET", f"/v1/files/{reply['archive']}")
        self.assertEqual(status, 200)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            members = tar.getnames()
        self.assertTrue(any(m.endswith(".xplane.pb") for m in members), members)
        gzip.decompress(data)
        self.assertEqual(self.adapter.request("GET", "/v1/files/profile-nope.tar.gz")[0], 404)


class TpuInterpretModeTest(unittest.TestCase):
    """TPU interpret mode (the Mosaic interpreter) on one small case per Pallas kernel."""

    @classmethod
    def setUpClass(cls):
        import jax.experimental.pallas.tpu as pltpu
        if not hasattr(pltpu, "force_tpu_interpret_mode"):
            raise unittest.SkipTest("this jax has no TPU interpret mode")
        cls.adapter = Adapter("--interpret", "tpu")

    @classmethod
    def tearDownClass(cls):
        assert cls.adapter.shutdown() == 0

    def test_mode_reported(self):
        _, hello = self.adapter.request("GET", "/v1/hello")
        self.assertEqual(hello["fingerprint"]["interpret_mode"], "tpu")
        _, kernels = self.adapter.request("GET", "/v1/kernels")
        for k in kernels["kernels"]:
            if k["name"] not in ("jax-xla", "xla-paged"):  # XLA, no Pallas
                self.assertIn("TPU interpret mode", k["description"])

    def test_small_cases(self):
        cases = [("pallas-flash", make_case(seq_q=128, heads_q=1, causal=True, bias_shape=[1, 1, 128, 128],
                                            segment_ids=True)),
                 # B = 2: splash is batched with lax.map here (vmap fails in this mode)
                 ("pallas-splash", make_case(batch=2, seq_q=128, heads_q=2, heads_kv=1, causal=True, softcap=5.0))]
        for kernel, case in cases:
            t = make_tensors(case)
            names = self.adapter.upload("tpu", t)
            reply = self.adapter.call("run", kernel, case, names, output="tpu.out")
            self.assertTrue(reply["ok"], reply)
            golden = reference(case, t)
            self.assertLessEqual(max_error(self.adapter.get_tensor("tpu.out"), golden),
                                 tolerance(case, golden, t), kernel)


class KernelRaisesTest(unittest.TestCase):
    """--interpret none on CPU: every Pallas kernel raises; the adapter answers ok:false and goes on."""

    def test_raise_is_ok_false(self):
        import jax
        if jax.default_backend() != "cpu":
            raise unittest.SkipTest("Pallas kernels compile natively on this backend")
        adapter = Adapter("--interpret", "none")
        try:
            case = make_case(seq_q=128)
            names = adapter.upload("r", make_tensors(case))
            reply = adapter.call("run", "pallas-flash", case, names, output="r.out")
            self.assertFalse(reply["ok"])
            self.assertIn("Only interpret mode is supported", reply["error"])
            self.assertEqual(reply["error_type"], "ValueError")
            again = adapter.call("run", "jax-xla", case, names, output="r.out")
            self.assertTrue(again["ok"], "the adapter serves on after a kernel raised")
        finally:
            self.assertEqual(adapter.shutdown(), 0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir")  # accepted for symmetry with the other e2e tests
    _, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)
