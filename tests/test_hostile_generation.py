"""Hostile arguments to the Python API and hostile model contents at generation time: absurd
sampling, length and tree parameters, text that is not Unicode, chat templates that try to escape
the sandbox or build gigabytes, NaN/Inf weights and drafters. Each gives a clear ValueError (or, for
a NaN drafter, still the target's own output), and the model keeps generating afterwards."""

from __future__ import annotations

import math

import numpy as np
import pytest

import eyas
from eyas.chat import ChatTemplate
from tests.fixtures import tiny_models
from tests.hostile.checks import rejects
from tests.parity.cases_speculative import random_checkpoint, write_checkpoint


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile_gen")
    target = tiny_models.random_llama_gguf(root / "tiny.gguf")
    spec = eyas.load(str(target), drafter="none").spec
    cfg, t = random_checkpoint(1, spec)
    return {"target": str(target), "drafter": str(write_checkpoint(root / "drafter", cfg, t)), "root": root,
            "cfg": cfg, "tensors": t}


@pytest.fixture(scope="module")
def model(files):
    return eyas.load(files["target"], drafter=files["drafter"])


def with_weights(root, name: str, change) -> str:
    tensors = tiny_models.random_llama_tensors()
    change(tensors)
    return str(tiny_models.write_gguf(root / name, "llama", tensors, tiny_models.LLAMA_CONFIG, "F32"))


# (id, keyword arguments of Model.generate, message pattern)
CALLS = [
    ("prompt_lone_surrogate", dict(prompt="a\ud800b"), r"\[tokenizer\] the text is not valid Unicode"),
    ("prompt_bytes", dict(prompt=b"hello"), r"prompt must be a str"),
    ("prompt_none", dict(prompt=None), r"prompt must be a str"),
    ("prompt_empty", dict(prompt=""), r"the prompt is empty"),
    ("chat_message_not_dict", dict(prompt=["hi"], chat=True), r"\[chat\] message 0"),
    ("chat_role_not_str", dict(prompt=[{"role": 1, "content": "x"}], chat=True), r"\[chat\] message 0"),
    ("chat_empty_list", dict(prompt=[], chat=True), r"\[chat\] messages must be a non-empty"),
    ("max_tokens_zero", dict(max_tokens=0), r"max_tokens must be an integer >= 1"),
    ("max_tokens_float", dict(max_tokens=4.0), r"max_tokens must be an integer >= 1"),
    ("max_tokens_over_context", dict(max_tokens=2**62), r"exceeds max_context"),
    ("temperature_nan", dict(temperature=math.nan), r"temperature must be a finite number"),
    ("temperature_inf", dict(temperature=math.inf), r"temperature must be a finite number"),
    ("temperature_negative", dict(temperature=-0.5), r"temperature must be a finite number"),
    ("temperature_string", dict(temperature="hot"), r"temperature must be a finite number"),
    ("top_p_zero", dict(temperature=1.0, top_p=0.0), r"top_p must be in \(0, 1\]"),
    ("top_p_nan", dict(temperature=1.0, top_p=math.nan), r"top_p must be in \(0, 1\]"),
    ("top_p_over_one", dict(temperature=1.0, top_p=1.5), r"top_p must be in \(0, 1\]"),
    ("top_k_negative", dict(temperature=1.0, top_k=-1), r"top_k must be an integer"),
    ("top_k_huge", dict(temperature=1.0, top_k=2**62), r"top_k must be an integer"),
    ("top_k_bool", dict(temperature=1.0, top_k=True), r"top_k must be an integer"),
    ("seed_negative", dict(temperature=1.0, seed=-1), r"seed must be an integer"),
    ("seed_huge", dict(temperature=1.0, seed=2**70), r"seed must be an integer"),
    ("seed_float", dict(temperature=1.0, seed=1.5), r"seed must be an integer"),
    ("stop_not_strings", dict(stop=[1, 2]), r"stop must be a str"),
    ("tree_garbage", dict(tree="lots"), r"tree policy 'lots' must be"),
    ("tree_not_a_policy", dict(tree=123), r"tree must be a TreePolicy"),
    ("tree_zero_width", dict(tree="0,3,8"), r"top_k must be an integer in \[1, 256\]"),
    ("tree_negative_chain", dict(tree="chain:-1"), r"depth must be an integer in \[1, 64\]"),
    ("tree_too_deep", dict(tree="chain:1000"), r"depth must be an integer in \[1, 64\]"),
    ("tree_over_the_drafter_slots", dict(tree="256,64,1024"), r"tree slots"),
    ("tree_total_too_small", dict(tree="4,3,1"), r"total_tokens must be an integer in \[2, 1024\]"),
]


@pytest.mark.parametrize("kw, match", [pytest.param(k, m, id=i) for i, k, m in CALLS])
def test_absurd_generate_arguments_are_refused(model, kw, match):
    kw = {"prompt": "hello", "max_tokens": 4, **kw}
    rejects(lambda: model.generate(kw.pop("prompt"), **kw), match)
    assert len(model.generate("hello", max_tokens=3).tokens) == 3  # the model still works


LOADS = [
    ("max_context_huge", dict(max_context=2**40), r"max_context must be an integer in \[2, 2\*\*31\)"),
    ("max_context_one", dict(max_context=1), r"max_context must be an integer"),
    ("threads_huge", dict(threads=10**6), r"num_threads must be in"),
    ("threads_zero", dict(threads=0), r"threads must be a positive integer"),
    ("kv_dtype_unknown", dict(kv_dtype="f8"), r"kv_dtype must be one of"),
    ("drafter_family_unknown", dict(drafter_family="medusa"), r"unknown drafter_family 'medusa'"),
    ("drafter_folder_missing", dict(drafter="/nonexistent/drafter"), r"no such drafter folder"),
]


@pytest.mark.parametrize("kw, match", [pytest.param(k, m, id=i) for i, k, m in LOADS])
def test_absurd_load_arguments_are_refused(files, kw, match, restore_isa_and_threads):
    rejects(lambda: eyas.load(files["target"], **{"drafter": "none", **kw}), match)


@pytest.mark.parametrize("name, change", [
    ("nan_in_ffn", lambda t: t["blk.0.ffn_down.weight"].__setitem__((0, 0), np.nan)),
    ("inf_output_norm", lambda t: t["output_norm.weight"].__setitem__(slice(None), np.inf)),
])
@pytest.mark.parametrize("drafter", [False, True], ids=["plain", "speculative"])
@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["greedy", "sampled"])
def test_nan_or_inf_weights_fail_clearly_at_the_first_token(files, name, change, drafter, temperature):
    """Not a silently empty answer: argmax of an all-NaN row would be token 0, an end-of-text id here."""
    m = eyas.load(with_weights(files["root"], name + ".gguf", change), drafter=files["drafter"] if drafter else "none")
    rejects(lambda: m.generate("hello", max_tokens=4, temperature=temperature, seed=1), r"NaN")


def test_a_nan_drafter_still_gives_the_targets_output(files, model):
    """The drafter only proposes: a broken one costs speed, never correctness (greedy bits, sampled no error)."""
    t = {k: v.copy() for k, v in files["tensors"].items()}
    t["fc.weight"][:] = np.nan
    broken = eyas.load(files["target"], drafter=str(write_checkpoint(files["root"] / "nan_drafter", files["cfg"], t)))
    plain = eyas.load(files["target"], drafter="none")
    assert broken.generate("hello", max_tokens=8).tokens == plain.generate("hello", max_tokens=8).tokens
    assert len(broken.generate("hello", max_tokens=8, temperature=1.0, seed=3, stop=[]).tokens) >= 1


# Chat templates come from model files: the sandbox must hold and no single expression may build gigabytes.
TEMPLATES = [
    ("dunder_class", "{{ ''.__class__.__mro__ }}", r"unsafe"),
    ("subclasses", "{{ ''.__class__.__mro__[1].__subclasses__() }}", r"unsafe"),
    ("cycler_globals", "{{ cycler.__init__.__globals__.os }}", r"unsafe"),
    ("mutate_messages", "{{ messages.append(1) }}", r"unsafe"),
    ("huge_range", "{% for i in range(10**9) %}{% endfor %}", r"Range too big"),
    ("string_times_huge", "{{ 'a' * 10**13 }}", r"'\*' would build"),
    ("list_times_huge", "{{ ([1] * 10**9) | length }}", r"'\*' would build"),
    ("plus_doubling", "{% set ns = namespace(x='a') %}{% for i in range(40) %}{% set ns.x = ns.x + ns.x %}"
                      "{% endfor %}{{ ns.x | length }}", r"'\+' would build"),
    ("tilde_doubling", "{% set ns = namespace(x='a') %}{% for i in range(40) %}{% set ns.x = ns.x ~ ns.x %}"
                       "{% endfor %}{{ ns.x | length }}", r"'~' would build"),
    ("power_huge", "{{ 10 ** 100000000 }}", r"'\*\*' would build"),
    ("output_huge", "{% for i in range(100000) %}{{ 'x' * 1000000 }}{% endfor %}", r"rendered prompt is over"),
    ("self_recursion", "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", r"RecursionError"),
    ("raise_exception", "{{ raise_exception('refused') }}", r"template error: refused"),
    ("missing_element", "{{ messages[5].content }}", r"no element 5"),
]


@pytest.mark.parametrize("source, match", [pytest.param(s, m, id=i) for i, s, m in TEMPLATES])
def test_hostile_chat_template_is_contained(source, match):
    template = ChatTemplate(source)
    rejects(lambda: template.render([{"role": "user", "content": "hi"}]), match, op="chat")


def test_message_content_is_data_not_template():
    template = ChatTemplate("{% for m in messages %}[{{ m.content }}]{% endfor %}")
    assert template.render([{"role": "user", "content": "{{ 7 * 7 }}{% raise %}"}]) == "[{{ 7 * 7 }}{% raise %}]"
    assert ChatTemplate("{{ 'ab' ~ 'c' }}{{ 2 ** 10 }}{{ 'x' * 3 }}").render("hi") == "abc1024xxx"
