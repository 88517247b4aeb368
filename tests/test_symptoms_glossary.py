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
# Runs that differ with their seeds fixed, host memory that stops growing once the workers
# are off, several cards hardly faster, a card's utilisation that swings, a result good
# again in train(), memory kept after del and gc.collect (the cache) or after empty_cache
# (the context), a training process killed part way, card 0 fuller than the others with
# the wrapper named, and a checkpoint's two shapes retold: each in several languages.
IN_EVERY_LANGUAGE = [
 ("training.batchnorm_running_stats", "テストで model.eval() にすると結果がすごく悪いです。BatchNorm を使っています"),
 ("training.batchnorm_running_stats", "model.eval() 로 테스트하면 결과가 매우 나쁩니다. BatchNorm 이 있습니다"),
 ("training.batchnorm_running_stats", "С model.eval() результаты очень плохие, в сети есть BatchNorm"),
 ("distributed.dataparallel_imbalance", "DataParallel だと 0番目のGPU のメモリがいっぱいになります"),
 ("distributed.dataparallel_imbalance", "DataParallel 을 쓰면 0번 GPU 메모리가 가득 차요"),
 ("distributed.dataparallel_imbalance", "С DataParallel 0-я карта забита под завязку, а остальные карты заполнены наполовину"),
 ("distributed.dataparallel_imbalance", "DataParallel を使うと 0番目のGPU だけメモリが多く使われ、他のGPUは半分しか使っていません"),
 ("distributed.dataparallel_imbalance", "DataParallel 로 학습하면 0번 GPU 메모리만 가득 차고 다른 GPU 는 절반만 사용합니다"),
 ("distributed.ddp_contexts_on_gpu0", "При обучении с DDP процессы других GPU тоже занимают память на нулевой видеокарте"),
 ("distributed.ddp_contexts_on_gpu0", "DDP で学習すると、他のGPUのプロセスも 0番目のGPU のメモリを使っています"),
 ("distributed.ddp_contexts_on_gpu0", "DDP 로 학습할 때 다른 GPU 의 프로세스도 0번 GPU 메모리를 차지합니다"),
 ("other.nondeterminism", "随机种子都固定了，可每次训练的结果都不一样"),
 ("other.nondeterminism", "隨機種子都固定了，但每次訓練結果都不同"),
 ("other.nondeterminism", "シードを固定しているのに、学習するたびに結果が違います"),
 ("other.nondeterminism", "시드를 고정했는데도 학습할 때마다 결과가 다릅니다"),
 ("other.nondeterminism", "Я зафиксировал сид, но каждый запуск даёт разные результаты"),
 ("other.nondeterminism", "Fijé la semilla pero cada entrenamiento da resultados diferentes"),
 ("dataloader.worker_copy_on_read", "训练时内存一直往上涨，num_workers 设成 0 内存就不涨了"),
 ("dataloader.worker_copy_on_read", "学習中にメインメモリが増え続けますが、num_workers=0 にするとメインメモリが増えなくなります"),
 ("dataloader.worker_copy_on_read", "학습 중 시스템 메모리가 계속 증가하는데 num_workers=0 으로 하면 시스템 메모리가 늘지 않아요"),
 ("dataloader.worker_copy_on_read", "Оперативная память постоянно растёт во время обучения, а с num_workers=0 перестаёт расти"),
 ("dataloader.worker_copy_on_read", "RAM keeps growing during training; with num_workers=0 the memory stops growing"),
 ("distributed.dataparallel_overhead", "用两张卡训练，双卡几乎没快多少"),
 ("distributed.dataparallel_overhead", "マルチGPUで学習してもほとんど速くならない"),
 ("distributed.dataparallel_overhead", "멀티 GPU 로 학습해도 거의 빨라지지 않습니다"),
 ("distributed.dataparallel_overhead", "На двух GPU обучение почти не быстрее, чем на одной"),
 ("distributed.dataparallel_overhead", "Training on two GPUs is barely faster than on one"),
 ("dataloader.input_bottleneck", "训练时 GPU 利用率波动很大，忽高忽低"),
 ("dataloader.input_bottleneck", "学習中の GPU 使用率が変動が大きく、安定しません"),
 ("dataloader.input_bottleneck", "학습 중 GPU 사용률이 요동칩니다"),
 ("dataloader.input_bottleneck", "Утилизация GPU скачет во время обучения"),
 ("training.batchnorm_running_stats", "测试时用 model.eval() 结果很差，把 model.eval() 改成 model.train() 效果马上就好了"),
 ("training.batchnorm_running_stats", "テストで model.eval() を model.train() に変えると結果が良くなります"),
 ("training.batchnorm_running_stats", "model.eval() 대신 model.train() 을 쓰면 결과가 좋아집니다"),
 ("memory.caching_allocator", "推理完以后 del model 再 gc.collect()，显存还是不释放"),
 ("memory.caching_allocator", "推論後に del model と gc.collect() をしてもGPUメモリが解放されない"),
 ("memory.caching_allocator", "del model 후 gc.collect() 를 해도 GPU 메모리가 해제되지 않아요"),
 ("memory.caching_allocator", "После del model и gc.collect() видеопамять не освобождается"),
 ("memory.cuda_context_reserved", "After del and torch.cuda.empty_cache() the GPU still shows 500 MiB in use"),
 ("memory.growing", "训练了几个 epoch 之后进程就被 killed 了"),
 ("memory.growing", "数エポック学習するとプロセスが kill されます"),
 ("memory.growing", "After a few epochs the training process gets killed"),
 ("distributed.ddp_contexts_on_gpu0", "DDP 训练时第一张卡的显存比其他卡多很多，其他卡的进程也占用 0 号卡"),
 ("distributed.ddp_contexts_on_gpu0", "With torchrun on 4 GPUs, GPU 0 runs out of memory while the other GPUs still have room"),
 ("distributed.dataparallel_imbalance", "With nn.DataParallel on 4 GPUs, GPU 0 runs out of memory while the other GPUs still have room"),
 ("distributed.dataparallel_imbalance", "用 DataParallel 训练，0 号卡显存满了，其他卡还空着很多"),
 ("state_dict.size_mismatch", "加载预训练权重时报错：形状为 [1000, 512] 的参数要加载进形状为 [10, 512] 的 fc.weight"),
 ("state_dict.size_mismatch", "学習済みの重みを読み込むと、fc.weight の形が (1000, 512) なのにモデルは (10, 512) だと言われます"),
 ("state_dict.size_mismatch", "가중치를 로드할 때 fc.weight 가 [1000, 512] 인데 모델은 [10, 512] 라고 합니다"),
 ("state_dict.size_mismatch", "При загрузке весов fc.weight имеет форму [1000, 512], а модель ждёт [10, 512]"),
]


@pytest.mark.parametrize(("entry", "text"), IN_EVERY_LANGUAGE,
                         ids=[f"{e}-{i}" for i, (e, _) in enumerate(IN_EVERY_LANGUAGE)])
def test_the_same_fact_told_in_any_language_reaches_its_entry(entry, text):
    assert _top(text) == entry


def test_loading_is_not_adding():
    """没加载 ("did not load") holds 没加 ("did not add"), which says a call left out."""
    read = in_english("pretrained 设的是 False，没有加载预训练模型")
    assert "without calling" not in read and "load" in read


def test_host_memory_is_told_from_the_gpus_in_chinese():
    read = in_english("机器内存一直往上涨，显存倒是没变")
    assert "RAM memory" in read and "GPU memory" in read


@pytest.mark.parametrize("text", [
    "已经设了梯度裁剪，日志里 grad_norm 还是 nan",
    "勾配クリッピングを入れても grad_norm が nan になります",
    "그래디언트 클리핑을 했는데도 grad_norm 이 nan 입니다",
    "Включил обрезку градиентов, но grad_norm всё равно nan",
])
def test_gradient_clipping_is_read_in_every_language(text):
    assert "gradient clipping" in in_english(text)


# The same facts written in traditional characters and Taiwan's words (記憶體, 顯示卡, 分散式).
IN_TRADITIONAL_CHARACTERS = [
 ("other.nondeterminism", "隨機種子都固定了，但每次訓練的結果都不一樣"),
 ("dataloader.worker_copy_on_read", "訓練時記憶體一直往上漲，num_workers 設成 0 記憶體就不漲了"),
 ("distributed.dataparallel_overhead", "用兩張卡訓練，雙卡幾乎沒快多少"),
 ("dataloader.input_bottleneck", "訓練時 GPU 利用率波動很大"),
 ("memory.caching_allocator", "推理完以後 del model 再 gc.collect()，顯存還是沒有釋放"),
 ("memory.growing", "訓練了幾個 epoch 之後進程就被 killed 了"),
 ("distributed.ddp_contexts_on_gpu0", "分散式訓練時，其他顯示卡的進程也會佔用 0 號卡的顯存"),
 ("distributed.dataparallel_imbalance", "用 DataParallel 訓練，0 號卡顯存比其他卡多很多"),
 ("state_dict.size_mismatch", "載入預訓練權重時：形狀為 [1000, 512] 的參數要載入形狀為 [10, 512] 的 fc.weight"),
 ("memory.growing", "训练几个 epoch 之后显存越来越大，最后爆显存"),
]


@pytest.mark.parametrize(("entry", "text"), IN_TRADITIONAL_CHARACTERS,
                         ids=[f"{e}-{i}" for i, (e, _) in enumerate(IN_TRADITIONAL_CHARACTERS)])
def test_the_same_fact_in_traditional_characters_reaches_its_entry(entry, text):
    assert _top(text) == entry


def test_japanese_keeps_the_characters_it_shares_with_traditional_chinese():
    """学習 and 問題 are Japanese as written; read as simplified they would be words no wording holds."""
    read = in_english("学習が進まない。num_workers=0 なら問題なく動きます")
    assert "model is not learning" in read and "works fine" in read


# Who was killed decides: the training process itself (host memory ran out over the run) or
# one of the loader's workers.
KILLED = [
    ("memory.growing", "训练了几个 epoch 之后进程就被 killed 了"),
    ("memory.growing", "数エポック学習するとプロセスが kill されます"),
    ("memory.growing", "몇 에폭 학습하면 프로세스가 kill 당합니다"),
    ("memory.growing", "После нескольких эпох процесс обучения убивается"),
    ("memory.growing", "After a few epochs the training process gets killed"),
    ("dataloader.worker_killed", "训练到一半 DataLoader 的 worker 进程被 killed 了"),
    ("dataloader.worker_killed", "ワーカープロセスが kill されます"),
    ("dataloader.worker_killed", "워커 프로세스가 kill 당합니다"),
    ("dataloader.worker_killed", "Воркер DataLoader убит посреди эпохи"),
    ("dataloader.worker_killed", "Halfway through an epoch a DataLoader worker is killed"),
]


@pytest.mark.parametrize(("entry", "text"), KILLED, ids=[f"{e}-{i}" for i, (e, _) in enumerate(KILLED)])
def test_the_process_killed_is_told_from_a_worker_killed_in_every_language(entry, text):
    assert _top(text) == entry
