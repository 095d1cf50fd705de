"""Chat templates rendered with jinja2 the way transformers renders them."""

from __future__ import annotations

import pytest

from eyas.chat import ChatTemplate
from tests.fixtures import tiny_tokenizer


def test_renders_messages_and_generation_prompt():
    t = ChatTemplate(tiny_tokenizer.CHAT_TEMPLATE)
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert t.render(msgs) == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    assert t.render("Hi", add_generation_prompt=False) == "<|im_start|>user\nHi<|im_end|>\n"


def test_bos_eos_and_helpers():
    src = "{{ bos_token }}{% for m in messages %}{{ m['content'] | tojson }}{% endfor %}{{ eos_token }}"
    assert ChatTemplate(src, bos_token="<s>", eos_token="</s>").render("a\"b") == '<s>"a\\"b"</s>'
    t = ChatTemplate("{% if messages[0]['role'] != 'user' %}{{ raise_exception('user first') }}{% endif %}ok")
    assert t.render("x") == "ok"
    with pytest.raises(ValueError, match=r"\[chat\] template error: user first"):
        t.render([{"role": "assistant", "content": "x"}])


def test_bad_inputs():
    t = ChatTemplate(tiny_tokenizer.CHAT_TEMPLATE)
    for bad in ([], [{"role": "user"}], [{"role": 1, "content": "x"}], 42):
        with pytest.raises(ValueError, match=r"\[chat\]"):
            t.render(bad)
    with pytest.raises(ValueError, match="does not parse"):
        ChatTemplate("{% for %}")
    with pytest.raises(ValueError, match="empty"):
        ChatTemplate("  ")


def test_default_model_template():
    from tests.fixtures.default_model import load_or_skip

    text = load_or_skip().chat_template.render("What is 2+2?")
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n")
