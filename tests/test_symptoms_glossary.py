"""The common symptoms described in other languages reach the same entries as in English.

`symptoms_glossary.in_english` reads the few fixed words people use for GPU memory
that overflows or grows, a run that hangs, gradients that are None and a model that
does not learn, in Chinese, Japanese, Korean, Russian, Spanish, Portuguese and
German, as the English phrases the knowledge base's symptom regexes know. The
descriptions below are whole sentences of the kind posted on forums, run through
`diagnose` with the shipped knowledge base.
"""

from __future__ import annotations

import pytest

from torchdoctor.knowledge import load_knowledge
from torchdoctor.match import diagnose
from torchdoctor.symptoms import readings
from torchdoctor.symptoms_glossary import in_english

KB = load_knowledge(include_user=False, use_cache=False, report=False)

GROWING = [
    "训练几个 epoch 之后显存越来越大，最后爆显存",
    "学習を続けるとGPUメモリが増え続けて、最後はメモリ不足で落ちます",
    "epoch 마다 GPU 메모리가 계속 증가하고 결국 메모리 부족 에러가 납니다",
    "Память GPU постоянно растёт с каждой эпохой, потом не хватает памяти",
    "La memoria de la GPU sigue aumentando en cada época hasta que se queda sin memoria",
    "A memória da GPU continua aumentando a cada época até ficar sem memória",
    "Der GPU-Speicher wächst ständig mit jeder Epoche, bis kein Speicher mehr frei ist",
]
HANGS_WITH_WORKERS = [
    "DataLoader 的 num_workers 设为 4 就卡死了，设为 0 一切正常",
    "num_workers=4 にすると最初のバッチで固まってしまいます。num_workers=0 なら問題なく動きます",
    "num_workers 를 4 로 설정하면 학습이 멈춰요",
    "При num_workers=4 обучение зависает на первом батче, с num_workers=0 работает нормально",
    "Con num_workers=4 el entrenamiento se cuelga, con num_workers=0 funciona bien",
    "Com num_workers=4 o treino trava no primeiro batch",
    "Mit num_workers=4 bleibt das Training hängen, mit num_workers=0 läuft es problemlos",
]
GRADS_NONE = [
    "打印出来 encoder 的 weight.grad 都是 None",
    "Модель не обучается: у всех параметров градиенты равны None",
    "Das Modell lernt nicht, die Gradienten sind None",
    # zero, not None, says the same of a graph that never reached the layers
    "训练时打印发现 backbone 所有层的梯度都是0，只有最后的全连接层有梯度",
    "backbone の勾配が0のままで、最後の層しか更新されません",
    "После backward градиенты энкодера равны нулю",
    "Los gradientes del encoder son cero después de backward",
]


def _top(text: str) -> str | None:
    matches = diagnose(text, KB).to_dict()["matches"]
    return matches[0]["entry"] if matches else None


@pytest.mark.parametrize("text", GROWING)
def test_memory_that_grows_until_it_overflows_is_growth_in_every_language(text):
    assert _top(text) == "memory.growing"


@pytest.mark.parametrize("text", HANGS_WITH_WORKERS)
def test_a_run_that_hangs_with_workers_is_the_loader_hang_in_every_language(text):
    assert _top(text) == "dataloader.hang"


@pytest.mark.parametrize("text", GRADS_NONE)
def test_gradients_that_are_none_or_zero_are_a_cut_graph_in_every_language(text):
    assert _top(text) == "training.detached_graph"


def test_a_loss_at_ln2_with_grads_none_is_a_cut_graph_not_a_flat_loss():
    text = ("模型就是不学：loss 一直是 0.693，准确率 50% 左右。换优化器、调学习率都没用，"
            "打印梯度发现很多参数的 p.grad 直接是 None。")
    assert _top(text) == "training.detached_graph"


def test_a_smaller_batch_that_still_runs_out_of_memory_is_the_oom_entry():
    assert _top("batch_size 从 16 一路降到 2，还是一到采样那一步就爆显存") == "memory.cuda_oom"
    assert _top("I lowered the batch size from 16 to 2 and still get out of memory") == (
        "memory.cuda_oom")


def test_full_width_punctuation_ends_a_statement_like_ascii():
    text = "train.py 里 total_loss += loss，验证时 val_loss += loss。显存会越占越多"
    assert "loss tensor accumulated without .item()" in readings(in_english(text))
    assert _top(text) == "memory.growing"
    # The Python number is no tensor: "+= loss.item()" is the fix, not the symptom.
    assert "loss tensor accumulated without .item()" not in readings(
        "total_loss += loss.item(), then print it")


def test_an_english_description_needs_no_copy():
    assert in_english("GPU memory keeps growing every epoch until CUDA out of memory") is None


def test_identifiers_and_numbers_stay_where_they_were():
    read = in_english("num_workers 设为 4 就卡死了")
    assert read is not None
    assert "num_workers" in read and "4" in read and "hangs" in read
    assert read.index("num_workers") < read.index("4") < read.index("hangs")


def test_a_loss_value_that_starts_with_zero_is_no_zero():
    read = in_english("loss 一直是 0.693，梯度是 0")
    assert read is not None
    assert "0.693" in read and read.count("is zero") == 1


@pytest.mark.parametrize(("text", "english"), [
    ("torch 是 cpu 版本", "cpu version"),
    ("装的是CPU版的 torch", "CPU version"),
    ("cuda.is_available() 永远返回 False", "returns  False"),
    ("is_available() всегда возвращает False", "returns  False"),
    ("多卡训练, 单卡测试", " multiple GPUs "),
    ("两块卡推理没问题, 一张卡就报错", " single GPU "),
])
def test_a_build_named_by_its_device_and_a_functions_answer_read_in_english(text, english):
    assert english in (in_english(text) or "")


@pytest.mark.parametrize("text", [
    "model.eval() を実行しても何も出なかった",
    "运行 model.eval() 之后什么都没有输出",
    "model.eval() 를 실행해도 아무것도 출력되지 않았어요",
    "model.eval() ничего не вывел",
    "model.eval() no imprime nada",
    "model.eval() gibt nichts aus",
])
def test_a_call_that_showed_nothing_is_read_in_every_language(text):
    assert "printed nothing" in (in_english(text) or "")


def test_a_captcha_is_no_validation():
    """验证码 (a captcha) holds the word for validation; it names no phase."""
    assert "validation" not in (in_english("识别验证码的模型每次结果都不一样") or "")


# Evaluation, memory and several GPUs, told in other languages: a call forgotten or not
# made (said after it in Japanese), a result that got worse or changed, the more of one the
# more of the other, card 0 against the others, the same as on one card.
ELSEWHERE = [
    ('training.eval_mode_left_on', '测试的时候忘了加 model.eval()，结果每次预测都不一样'),
    ('training.eval_mode_left_on', '推論時に model.eval() を呼んでいなかったので、結果が毎回変わりました'),
    ('training.eval_mode_left_on', 'При инференсе я не вызываю model.eval(), и предсказания каждый раз разные'),
    ('training.eval_mode_left_on', 'No llamo a model.eval() antes de evaluar y la precisión cambia cada vez'),
    ('training.batchnorm_running_stats', '加了 model.eval() 之后验证集准确率反而变差了很多'),
    ('training.batch_dependent_forward', 'batch size 改成 1 之后预测结果就变了，和 batch 里其他图片有关'),
    ('memory.caching_allocator', '验证的时候没有用 torch.no_grad()，显存比训练时还高'),
    ('memory.growing', '验证时把 outputs.append(logits) 放在列表里，显存越来越大'),
    ('dataloader.worker_copy_on_read', 'num_workers 越大内存占用越高，每个 worker 都复制了一份数据集'),
    ('distributed.dataparallel_imbalance', '用 DataParallel 多卡训练，0 号卡显存占用比其他卡多很多'),
    ('distributed.missing_distributed_sampler', '用了 4 张卡 DDP，每个 epoch 的 iteration 数还是和单卡一样'),
    ("training.eval_mode_left_on", "同一段音频连续推理了几次，每次结果都不一样，推理的时候 dropout 也在起作用吗？"),
]


@pytest.mark.parametrize(("entry", "text"), ELSEWHERE, ids=[e for e, _ in ELSEWHERE])
def test_evaluation_memory_and_multi_gpu_symptoms_reach_their_entry_in_other_languages(entry, text):
    assert _top(text) == entry


KEYS_AFTER_WRAPPER = [
    # trained under DataParallel on several GPUs, loaded on one: the keys carry "module."
    ("用多卡训练的模型,换成单卡加载权重就报 Missing key(s),两块卡推理却没问题\n"
     "RuntimeError: Error(s) in loading state_dict for UNet:\n"
     '\tMissing key(s) in state_dict: "inc.conv.0.weight", "inc.conv.0.bias"...\n'),
    ("Trained with nn.DataParallel on 4 GPUs; running predict.py on one GPU fails:\n"
     "RuntimeError: Error(s) in loading state_dict for UNet:\n"
     '\tMissing key(s) in state_dict: "inc.conv.0.weight", "inc.conv.0.bias"...\n'),
]


@pytest.mark.parametrize("text", KEYS_AFTER_WRAPPER)
def test_keys_missing_after_training_on_several_gpus_and_loading_on_one_are_the_prefix(text):
    assert _top(text) == "state_dict.module_prefix"


def test_a_run_slower_on_several_gpus_than_on_one_is_no_checkpoint_prefix():
    # the same "several GPUs ... one GPU" shape without a checkpoint being loaded
    text = "Training on 4 GPUs with DataParallel is slower than on one GPU, each step takes longer"
    assert _top(text) == "distributed.dataparallel_overhead"


def test_the_words_for_several_gpus_one_gpu_and_an_unwrapped_model_read_as_english():
    read = in_english("单机多卡训练,单卡加载,不包 DataParallel 的话推理报错")
    assert "multiple GPUs" in read and "single GPU" in read and "load" in read
    assert "without the wrapper" in read and "inference" in read


@pytest.mark.parametrize("text", [
    "用 4 张卡和 3 张卡都试过，结果单卡训练的时间最短，多卡反而更慢。",
    "多卡训练比单卡还要慢，这正常吗？",
])
def test_several_cards_slower_than_one_is_the_multi_gpu_overhead(text):
    diagnosis = diagnose(text, KB)
    assert diagnosis.matches and diagnosis.matches[0].entry.id == "distributed.dataparallel_overhead"
