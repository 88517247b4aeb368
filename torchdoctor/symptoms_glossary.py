"""The common symptoms as people write them in other languages, read in English.

The knowledge base's ``symptoms:`` regexes are written in English: "memory keeps
growing", "hangs with num_workers", "grad is None", "model is not learning". A
person who describes the same run in Chinese, Japanese, Korean, Russian, Spanish,
Portuguese or German uses a handful of fixed words for these few symptoms ("爆显存",
"卡死", "не обучается", "se cuelga", "hängt") and for what surrounds them (a call
forgotten, a result that got worse, card 0 against the others), and the identifiers and numbers
around them (``num_workers``, ``p.grad``, ``None``, ``0``) stay as they are. So the
words are read, in place, as the English phrase an English description would use,
and the symptom regexes see that English copy beside the text: one regex serves
every language, and an entry gains no per-language branch.

A CJK input method types full-width punctuation and digits ("，", "：", "０.６９３");
NFKC folds them to ASCII, and the ideographic full stop and comma, which NFKC keeps,
are read as ". " and ", ", so a regex that ends a statement at a comma or full stop
reads them too.

Only what a word says is read; the copy keeps every identifier, number and line
break where it was, so phrases that relate two things ("num_workers = 0 ... works
fine") keep their order and their distance.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from torchdoctor.linear_regex import bounded

# (wording, English) in the order they are read: a longer wording before the words it
# contains ("显存溢出" before "显存"). Each wording is a plain alternation of fixed words
# with bounded gaps, linear on any text.
_GLOSSARY: tuple[tuple[str, str], ...] = (
    # --- out of memory ----------------------------------------------------------
    ((r"爆显存|显存(?:直接|又|就)?(?:爆|炸)(?:掉|了)?|显存(?:溢出|不足|不够用?)|(?:内存|显存)(?:占)?满了"
     r"|把?显存(?:全部|全都|都|直接)?(?:被)?(?:耗光|耗尽|用光|用完|吃光|吃满|占满)"
     r"|GPU\s*メモリ(?:が|の)?(?:不足|足りない|あふれ)|メモリ(?:が|の)?(?:不足|足りない)|メモリ(?:ー)?エラー"
     r"|(?:GPU\s*)?메모리(?:가)?\s*부족|메모리가\s*터"
     r"|(?:не хватает|нехватка|недостаточно|закончилась|кончается|кончилась)\s+(?:видео)?памяти"
     r"|(?:se queda|me quedo|quedarse)\s+sin\s+memoria|sin memoria|memoria insuficiente"
     r"|(?:fica|ficou|ficar)\s+sem\s+mem[óo]ria|sem mem[óo]ria|falta de mem[óo]ria|mem[óo]ria insuficiente"
     r"|(?:zu wenig|nicht genug|kein(?:en)?)\s+(?:GPU-|Grafik)?Speicher|Speicher\s+(?:ist\s+)?(?:voll|läuft voll|reicht nicht)"),
     "out of memory"),
    (r"内存(?:溢出|不足|不够用?|爆了)|爆内存", "out of memory"),
    # --- memory that stops growing once something changed ("num_workers 设成 0 内存就不再涨了") --
    ((r"(?:就|也|便)?不(?:再|会)?(?:往上)?(?:涨|增长|增加|上涨|上升)(?:了)?|没(?:有)?(?:再)?(?:涨|增长|增加|上涨)(?:了)?"
     r"|増えなくな\w{0,3}|増えな(?:い|かった)|増加しな(?:い|く)\w{0,3}|(?:늘지|증가하지|늘어나지)\s*않\w{0,3}"
     r"|перестал\w*\s+расти|переста[её]т\s+расти|не\s+раст[её]т|больше\s+не\s+раст[её]т"
     r"|deja\s+de\s+crecer|ya\s+no\s+crece|para\s+de\s+crescer|n[ãa]o\s+cresce\s+mais"
     r"|w[äa]chst\s+nicht\s+mehr|steigt\s+nicht\s+mehr"),
     " stops growing "),
    # --- memory that grows step by step ----------------------------------------------
    ((r"越占越多|越来越(?:大|多|高)|越\w越(?:多|大|高)|(?:不断|一直|持续|逐渐|慢慢|逐步|一点点|一点一点)(?:地)?(?:在)?(?:增加|增长|上涨|往上涨|上升|变大|累积)"
     r"|増え続け\w{0,3}|(?:どんどん|徐々に|少しずつ)(?:増え|増加)\w{0,3}|増加し続け\w{0,3}"
     r"|계속\s*(?:증가|늘어|올라)\w{0,4}|점점\s*(?:증가|늘어|커)\w{0,4}"
     r"|(?:постоянно|постепенно|непрерывно|всё время|все время)\s+(?:растёт|растет|увеличивается|растут)"
     r"|(?:растёт|растет|увеличивается)\s+(?:с каждой|каждую|каждый)\s+\w+"
     r"|(?:sigue|va)\s+(?:aumentando|creciendo|subiendo)|aumenta\s+(?:cada|en cada|con cada)"
     r"|(?:continua|vai|fica)\s+(?:aumentando|crescendo|subindo)"
     r"|(?:wächst|steigt|nimmt)\s+(?:ständig|stetig|immer weiter|kontinuierlich|mit jede\w)\w*(?:\s+zu)?"
     r"|(?:ständig|stetig|immer weiter)\s+(?:wächst|steigt|an)"),
     "keeps growing"),
    (r"显存|ビデオメモリ|GPU\s*メモリ|GPU\s*메모리|видеопамят\w*|memoria (?:de|da) (?:la )?GPU|GPU-Speicher|Grafikspeicher",
     "GPU memory"),
    # Chinese tells the host's memory (内存) from the GPU's (显存); the other languages use one word.
    ((r"主机内存|系统内存|内存|メインメモリ|主記憶|システムメモリ|시스템\s*메모리|\b램\b|оперативн\w*\s+памят\w*|\bОЗУ\b"
      r"|memoria\s+RAM|mem[óo]ria\s+RAM|Hauptspeicher"), "RAM memory"),
    (r"メモリ|메모리|\bпамят\w*|\bmemoria\b|\bmem[óo]ria\b|\bArbeitsspeicher\b|\bSpeicher\b", "memory"),
    # --- hangs ----------------------------------------------------------------------
    (r"(?:就|再也|也|都)?不(?:再)?卡了?(?=[，,。.;；\s]|$)", " works fine"),
    # "卡住", "卡在", "不动了" say "stuck" of a loss as of a run; "stuck" is the English
    # word both kinds of regex read.
    (r"卡住|卡在|不动了|停住|停在那", "stuck"),
    ((r"卡死|假死|没(?:有)?反应|hang住"
     r"|固まる|固まって|固まり|フリーズ|ハングアップ|ハングし|止まって(?:しまい|しま)?"
     r"|멈춰|멈춥|멈춤|멈추|먹통|응답\s*없"
     r"|зависа\w*|завис(?:ает|ло|ла|ли)?\b|виснет|висит|застрева\w*"
     r"|se\s+(?:cuelga|congela|bloquea|traba|queda\s+(?:colgado|congelado|trabado))"
     r"|\b(?:trava|travando|travou|congela|congelando)\b|fica\s+travado"
     r"|\bhängen\b(?!\s+von)|hängt(?:\s+sich)?(?:\s+auf)?|friert\s+ein|eingefroren"),
     "hangs"),
    ((r"一切正常|正常(?:运行|训练|跑)|(?:能|可以)(?:正常)?跑(?:通|起来)?|没(?:有)?问题"
     r"|問題なく動|正常に動|정상\s*(?:작동|동작)|работает нормально|funciona (?:bien|normalmente)"
     r"|funciona normalmente|läuft (?:es |alles )?(?:normal|problemlos|ohne Probleme)"),
     "works fine"),
    # num_workers and other settings as a sentence gives them.
    ((r"(?:(?:设|调|改|设置)(?:成|为|到))?(?:大于|超过|多于)|(?:より大きく|以上に)|보다\s*크게"
     r"|больше|mayor que|maior que|größer als"),
     " greater than "),
    # "num_workers 设为 4", "num_workers を 4 に設定", "num_workers 를 4 로 설정": a setting
    # and its value, read as "num_workers = 4".
    (r"(?:设|调|改|设置)(?:成|为|到)(?=\s*\d)|(?:を|를|을)(?=\s*\d)", " = "),
    (r"(?<=\d)\s*(?:に|로|으로)\s*(?:設定|変更|설정|변경)\w{0,4}", " "),
    # --- gradients None or zero -----------------------------------------------------
    # Clipping named with its object: "梯度裁剪", "勾配クリッピング", "обрезка градиентов".
    ((r"梯度(?:裁剪|截断)|勾配(?:の)?クリッピング|(?:그래디언트|기울기)\s*클리핑|\b(?:обрезк|клиппинг)\w*\s+градиент\w*"
     r"|\bградиентн\w*\s+(?:обрезк|клиппинг)\w*|\brecorte\s+de\s+gradientes?\b|\bGradient(?:en)?-?Clipping\b"),
     " gradient clipping "),
    (r"梯度", " gradient "),
    (r"勾配", " gradient "),
    (r"기울기|그래디언트", " gradient "),
    (r"градиент\w*", " gradients "),
    (r"\bgradientes?\b", " gradients "),
    (r"\bGradienten\b", " gradients "),
    # Gradients that vanish: "勾配が消えて", "梯度消失", "기울기 소실", "затухают", "se desvanecen".
    ((r"消えて?(?:しまう|しまって|しまい|しまった|いる|る)?|消失|소실\w{0,3}|затуха\w*"
     r"|\b(?:se\s+)?desvanec\w*|\bverschwind\w*"),
     " vanishing "),
    # A value 0 said of gradients: "梯度都是0", "勾配が0", "градиенты равны нулю", "son cero".
    ((r"(?:直接|都|全|全部|全都|一直|还)?(?:是|为|等于|成了|变成)\s*(?:0|零)(?![\d.%])"
     r"|(?:が|は)\s*(?:0|ゼロ)(?![\d.%])|(?:가|이|는|은)\s*0(?![\d.%])"
     r"|\bравн\w*\s+(?:нулю|0(?![\d.%]))|\b(?:es|son|é|são)\s+(?:cero|zero|0(?![\d.%]))"
     r"|\b(?:ist|sind)\s+(?:null|0(?![\d.%]))\b"),
     " is zero"),
    ((r"(?:直接|都|全|全部|全都|一直|还)?(?:是|为|等于|成了|变成)\s*(?=None\b|0(?![\d.])|零)"
     r"|(?:が|は)\s*(?=None\b|0(?![\d.]))|(?:가|이|는|은)\s*(?=None\b|0(?![\d.]))"
     r"|(?:равн\w*\s*|\s[—-]\s+)(?=None\b)|\b(?:es|son|é|são|sind|ist)\s+(?=None\b)"),
     " is "),
    (r"零(?=[，,。.;；\s]|$)", "0"),
    # --- not learning ---------------------------------------------------------------
    ((r"(?:就是|根本|完全|一直)?不(?:学|学习|训练)(?=[:：，,。.;；\s]|$)|学不到(?:东西)?|没(?:有)?在学"
     r"|学習(?:が)?(?:進まない|しない|されない)|학습(?:이)?\s*(?:안\s*되|되지\s*않)"
     r"|не\s+(?:обучается|учится)|no\s+aprende|não\s+aprende|lernt\s+(?:nicht|nichts)"),
     " model is not learning"),
    (r"不收敛|收敛不了|収束しない|수렴하지\s*않|не\s+сходится|no\s+converge|não\s+converge|konvergiert\s+nicht",
     " does not converge"),
    # converging, but slowly: "收敛怎么这么慢", "収束が遅い", "수렴이 느려"
    ((r"收敛(?:速度)?(?:得|的)?(?:怎么|很|太|这么|那么|非常|特别|比较)*慢|収束(?:が|の)?(?:とても|すごく)?遅|수렴(?:이|속도가)?\s*(?:너무\s*)?느리"
     r"|сходится\s+(?:очень\s+)?медленно"),
     " the loss converges very slowly"),
    ((r"(?:一直|还是|始终|总是)?(?:不下降|不降|降不下去|没有下降|没下降)|下がらない|줄지\s*않|не\s+(?:падает|уменьшается|снижается)"
     r"|no\s+(?:baja|disminuye)|não\s+(?:cai|diminui)|sinkt\s+nicht"),
     " does not decrease"),
    (r"(?:还是|仍然|依然|依旧|还会)(?=\S)|\bвс[её]\s+равно\b|\bпо-прежнему\b|여전히|それでも", " still "),
    # Whether a call is needed, and a call left out: "不需要 model.eval() 吗", "不调用 eval".
    (r"不应该|不应当", " should not "),
    (r"是不是(?:应该|应当|要)|是否(?:应该|应当)|应该|应当|(?:する|呼ぶ)べき", " should "),
    (r"不需要|不用(?=\s*\w+\.\w+\()|要らない|必要ない|필요\s*없", " not need "),
    (r"需要|必要|필요", " need "),
    # A call left out, said after it (Japanese puts the verb last): "model.eval() を呼んでいなかった".
    ((r"を\s*(?:呼んでいな(?:い|かった)|呼ばなかった|呼び忘れ\w{0,4}|付け忘れ\w{0,4}|入れ忘れ\w{0,4})"
     r"|를\s*호출하지\s*않\w{0,3}"), " not called "),
    ((r"忘(?:了|记了?|記)(?:加|调用|写|添加)?|(?:呼び|付け|入れ)忘れ\w{0,4}|забы(?:л|ла|ли)\w{0,3}(?:\s+вызвать)?"
     r"|\bolvid(?:é|e|aste|ó)\w{0,3}(?:\s+(?:llamar|poner))?|\besqueci\w{0,3}|\bvergessen\b"), " forgot "),
    (r"\bне\s+(?:вызыва\w*|вызвал\w*)", " do not call "),
    (r"不调用|没(?:有)?调用|不加(?!载)|没(?:有)?加(?!载)|呼ばない|呼んでいない|호출하지\s*않", " without calling "),
    # --- several processes on one card ------------------------------------------------
    # "0 号显卡", "第一张卡", "主卡": the card people call GPU 0; each rank's process on it.
    ((r"(?:0|零)\s*号\s*(?:显卡|卡|GPU)|(?<![\d\-~～])0\s*(?:显卡|卡)|(?:显卡|卡)\s*0(?![\d.])|第一(?:张|块)\s*(?:显卡|卡|GPU)|主卡"
     r"|0\s*番(?:目の)?\s*GPU|[0０]번\s*GPU|GPU\s*0\s*번|첫\s*번째\s*GPU|1\s*枚目の\s*GPU"), " GPU 0 "),
    ((r"\bна\s+(?:нулевой|первой|0-?й)\s+(?:видеокарте|карте|GPU)"), " on GPU 0 "),
    ((r"\b0-?я\s+(?:видео)?карта|\bнулев\w+\s+(?:видеокарт\w*|карт\w*|GPU)|\bперв\w+\s+(?:видеокарт\w*|GPU)"), " GPU 0 "),
    # A card filled to the top: "забита под завязку", "переполнена".
    ((r"\bзабит\w*(?:\s+под\s+завязку)?|\bпереполнен\w*|\bзаполнен\w*\s+полностью|いっぱいにな\w{0,3}|満杯\w{0,3}"
     r"|가득\s*차\w{0,3}"), " is full "),
    # The processes of the other cards by their numbers: "1-7 号卡的进程", "1 卡上的子进程".
    (r"[1-9]\d?\s*(?:[-~～到至]\s*\d+\s*)?号?\s*(?:显卡|卡)(?:上)?的?\s*子?进程", " each rank's process "),
    ((r"每(?:一)?个进程|所有(?:的)?进程|各(?:个)?进程|(?:各|全)プロセス|(?:각|모든)\s*프로세스"
     r"|кажд\w{1,3}\s+процесс\w{0,3}|\bcada proceso\b|\bjede[sn]?\s+Prozess\w{0,2}"),
     " every process "),
    # A call that showed nothing: in a notebook eval() returns the module and displays it.
    ((r"何も(?:出|表示され|出力され)(?:なかった|ない|ません(?:でした)?)|什么都没(?:有)?(?:输出|显示|打印)|没有(?:任何)?(?:输出|显示)"
     r"|아무것도\s*(?:출력|표시)되지\s*않\w{0,3}|ничего не (?:вывел\w*|выводит|напечатал\w*|показал\w*)"
     r"|no (?:imprime|imprimi[óo]|muestra|mostr[óo]) nada|n[ãa]o (?:imprime|imprimiu|mostra|mostrou) nada"
     r"|(?:gibt|gab) nichts aus|zeigt(?:e)? nichts(?: an)?"),
     " printed nothing "),
    # A result that got worse after a change ("一加上 model.eval() 精度就变差了"); not 下降, which a
    # falling loss also says.
    (r"变差(?:了)?|更差(?:了)?|差(?:了)?很多|悪くな\w{0,3}|악화\w{0,3}|стал\w{0,2}\s+хуже|empeor\w{0,3}", " worse "),
    # "num_workers 越大，内存占用越高": the more of one, the more of the other.
    (r"越(?:大|高|多)", " increases "),
    (r"比(?:其他|其它|别的|另外的?|其余)(?:几)?(?:张|块)?(?:卡|显卡|GPU)(?:的)?(?:显存)?\s*(?:占用)?\s*(?:都)?(?:多|高|大)(?:很多|不少|得多|一倍)?",
     " much more than the other cards "),
    # The cards that are not card 0, and each one's process: "另外 7 张卡", "其他显卡对应的进程".
    ((r"(?:其他|其它|别的|另外的?|其余|剩下的?)(?:的)?\s*(?:显卡|卡|GPU)(?:对应|上)?的?\s*子?进程|他の\s*GPU\s*の\s*プロセス"
     r"|다른\s*GPU\s*의?\s*프로세스|процесс\w{0,3}\s+других\s+(?:GPU|карт|видеокарт)\w*"),
     " each rank's process "),
    ((r"(?:其他|其它|别的|另外的?|其余|剩下的?)(?:的)?\s*(?:\d+|几|两|三|七)?\s*(?:张|块)?\s*(?:显卡|卡|GPU)|他の\s*GPU|다른\s*GPU"
     r"|остальн\w+\s+(?:GPU|карт\w*|видеокарт\w*)|других\s+(?:GPU|карт\w*|видеокарт\w*)"),
     " the other cards "),
    (r"占(?:用|着|了)?(?=\s*GPU 0\b)", " hold memory on "),
    (r"(?:加载|载入)?(?:到|至)(?:了)?(?=\s*GPU 0\b)", " load to "),
    # Training picked up again from a checkpoint: "断点续训", "チェックポイントから再開".
    ((r"断点续(?:训|练|跑)|从断点(?:恢复|继续)(?:训练)?|チェックポイントから(?:学習を)?再開\w{0,3}|체크포인트에서\s*(?:학습을\s*)?재개\w{0,3}"
     r"|возобнов\w*\s+(?:обучени\w*\s+)?с\s+(?:чекпоинта|контрольной\s+точки)"), " resume from checkpoint "),
    # A loader's worker is not the training process: "worker 进程被 killed" is a worker killed.
    ((r"(?:worker|dataloader|data\s*loader)\s*(?:的)?\s*(?:子)?进程|工作进程|ワーカー(?:プロセス)?|워커(?:\s*프로세스)?"
      r"|\bворкер\w*|\bрабоч\w+\s+процесс\w*"), " worker process "),
    (r"进程|プロセス|프로세스|\bпроцесс(?:\s+обучения)?\b", " the process "),
    # A run split over processes by a launcher: "分布式训练", "分散学習", "분산 학습", "распределённое обучение".
    (r"分布式|分散(?:学習|訓練|並列)|분산\s*(?:학습|훈련)|распредел[её]нн\w*", " distributed "),
    (r"(?:和|跟|与)单卡(?:时|的时候)?(?:一样|相同|差不多)", " the same as on one GPU "),
    (r"没(?:有)?用(?=\s*[\w.]+\()", " without "),
    # The same input run again: "同一张图片连续预测几次，每次输出的结果都不一样".
    (r"(?:连续|重复|多次)?(?:预测|推理|运行|跑)(?:了)?(?:几|多|两|好几)次", " predicted several times "),
    (r"每次(?:输出|预测|运行)?(?:的)?(?:结果)?都不(?:一样|同)", " different every time "),
    # The phase a result comes from, and a result that changed.
    (r"验证(?:集|阶段)?(?!码)|検証|валидаци\w*", " validation "),
    (r"推理|推論", " inference "),
    (r"(?:预测|推理|输出)(?:的)?结果|予測結果|推論結果", " prediction results "),
    (r"(?:也)?在起作用|(?:也)?(?:生效|起效)(?:了)?", " is active "),
    (r"(?:预测|推理|测试)(?:的)?时(?:候)?", " at prediction "),
    (r"(?:就|都|也)?(?:变了|改变了|不一样了|不同了)", " changed "),
    # --- runs that differ although their seeds were fixed -------------------------------
    ((r"随机种子|隨機種子|种子|種子|(?:乱数)?シード(?:値)?|(?:랜덤\s*)?시드|\bсид(?:ы|ом|а|ов)?\b|\bзерн(?:о|а|ом)\b"
     r"|\bsemillas?\b|\bsementes?\b"),
     " seed "),
    ((r"固定(?:了|住|好)?|固定し\w{0,3}|고정\w{0,3}|зафиксирова\w*|\bfij(?:o|a|é|ada|ado|adas|ados|ar)\b"
     r"|\bfix(?:o|a|ado|ada|ei|ados|adas)\b|\bfestgelegt\b|\bfixiert\b"),
     " fixed "),
    ((r"不(?:太)?一样|不一樣|不同|不一致|不相同|違う|違い(?:ます|ました)|異な\w{0,3}|バラバラ|다르\w{0,3}|다릅\w{0,3}|달라\w{0,3}|다른\s*결과"
     r"|\bразн(?:ые|ый|ая|ое|ых)\b|\bотлича\w*|\bdiferentes?\b|\bdistint[oa]s\b|\bunterschiedlich\w*"),
     " different "),
    # --- random numbers that repeat --------------------------------------------------
    (r"随机数|乱数|난수|случайны\w*\s+числ\w*|n[úu]meros\s+aleat[óo]rios|Zufallszahlen",
     " random numbers "),
    ((r"一模一样|完全(?:相同|一样)|(?:都)?(?:相同|一样|同一串)|全く同じ|同じ|똑같|동일|одинаков\w*"
     r"|(?:los|las|os|as)\s+mism[oa]s|\bgleich(?:e|en)?\b"),
     " same "),
    (r"损失|損失|손실|\bпотер[ьия]\b|\bp[ée]rdida\b", " loss "),
    # --- when a value went wrong: before any update, or with the first one ------------
    # ("训练一开始是正常的" says the start was fine: only "一开始(loss)就", already at the start.)
    ((r"(?:第一次|一次)更新(?:之|以)?后|更新一次(?:之|以)?后|一回(?:目の)?更新(?:の)?後|첫\s*업데이트\s*(?:후|이후)"
     r"|после\s+(?:первого|одного)\s+(?:обновления|шага)"),
     " after the first update "),
    ((r"(?:从|打)?一开始(?:就|(?=[^，,。.;；\n]{1,12}就))|从头就|最初から|처음부터|с\s+самого\s+начала|desde el (?:principio|inicio)"
     r"|desde o (?:começo|início)|von Anfang an"),
     " from the start "),
    ((r"第一(?:个|次|步)?(?=\s*(?:step|iter|batch|个?\s*(?:迭代|批次?|步)))|最初の(?=\s*(?:ステップ|イテレーション|バッチ|step|iter|batch))"
     r"|첫(?:\s*번째)?(?=\s*(?:스텝|배치|반복|step|iter|batch))"),
     " first "),
    (r"第二(?:个|次|步)?(?=\s*(?:step|iter|batch|个?\s*(?:迭代|批次?|步)))|2\s*(?:番目|回目)の(?=\s*(?:ステップ|イテレーション|バッチ|step|iter|batch))",
     " second "),
    (r"迭代|イテレーション|반복", " iteration "),
    # Later, once training ran a while: "后来 loss 变成 nan", "しばらくすると", "через некоторое время".
    ((r"后来|(?:跑|训练|训)着(?:跑|训练|训)着|(?:过了)?一段时间(?:之|以)?后|(?:跑|训练|训)(?:了)?一段时间(?=就)|训练(?:了)?(?:几|一些|多)个\s*epoch(?:之|以)?后|しばらく(?:すると|して)|途中から"
     r"|나중에|얼마\s*후|через\s+(?:некоторое\s+время|несколько\s+эпох)|despu[ée]s\s+de\s+(?:un\s+tiempo|varias\s+[ée]pocas)"
     r"|depois\s+de\s+(?:um\s+tempo|algumas\s+[ée]pocas)|nach\s+(?:einer\s+Weile|einigen\s+Epochen)"),
     " later "),
    # --- the precision a run trains in -----------------------------------------------
    ((r"(?:自动)?混合精度|混合精度|混合精度学習|혼합\s*정밀도|смешанн\w*\s+точност\w*|precisi[óo]n mixta"
     r"|precis[ãa]o mista|gemischte[rn]?\s+Pr[äa]zision"), " mixed precision "),
    (r"半精度|반정밀도|половинн\w*\s+точност\w*", " half precision "),

    (r"批(?:次)?大小|バッチサイズ|배치\s*크기", " batch size "),
    # How many GPUs a run used: "多卡", "两块卡", "单卡", "一张卡".
    # the cards may be named by their model: "两张 rtx3090", "4块A100".
    ((r"多(?:张|块)?(?:卡|GPU|显卡)|(?:两|二|三|四|八|[2-9])\s*(?:张|块)\s*(?:卡|GPU|显卡"
      r"|(?:rtx|gtx|tesla|titan)?\s*(?:[A-Za-z]?\d{3,4}(?:\s*ti)?|[AHV]100|[AH]800|A6000)(?![\dA-Za-z]))"), " multiple GPUs "),
    (r"单(?:张|块)?(?:卡|GPU|显卡)|一\s*(?:张|块)\s*(?:卡|GPU|显卡)", " single GPU "),
    # A build named by its device ("cpu 版本", "CPU版", "CPU バージョン"): which torch is installed.
    (r"(?<=cpu)\s*(?:版本|版|バージョン|버전|верси[яию])", " version"),
    # A function's answer as the person saw it: "永远返回 False", "always returns False".
    ((r"(?:永远|总是|一直|始终|都)?返回(?=\s*(?:True|False|None)\b)"
     r"|(?:всегда\s+)?возвращает(?=\s*(?:True|False|None)\b)"),
     " returns "),
    # Slower, said of a run against another: "多卡反而更慢", "1GPUより遅い", "langsamer".
    ((r"(?:反而|反倒)?(?:都)?(?:更|还要?)慢|慢(?:了)?(?:很多|不少|一倍|好几倍)|より(?:も)?遅い|더\s*느려\w{0,3}|медленнее"
      r"|m[áa]s\s+lent[oa]|\blangsamer\b"), " slower "),
    # A run on more cards that is hardly faster: "双卡几乎没快多少", "ほとんど速くならない".
    ((r"(?:几乎|基本(?:上)?|并)?没(?:有)?(?:快|提速|加速)(?:多少|很多|太多|多)?|快不了多少|(?:速度)?(?:提升|加速|提速)(?:不大|不明显|很小|有限)"
     r"|速度(?:几乎|基本|一点都|一点也|完全|并)?(?:没(?:有)?|不见)(?:什么)?(?:提升|提高|变快|加快)|(?:ほとんど|あまり)速くな(?:らない|りません)"
     r"|(?:거의|별로)\s*빨라지지\s*않\w{0,3}|(?:почти|практически)\s+не\s+(?:ускоря\w*|быстрее)|не\s+намного\s+быстрее"
     r"|\bapenas\s+(?:m[áa]s\s+)?r[áa]pid\w*|\bkaum\s+schneller\b"),
     " barely faster "),
    # How busy a GPU is, and a figure that swings: "GPU 利用率波动很大", "GPU使用率が変動".
    ((r"(?:загрузк|утилизаци)\w*\s+(?:GPU|ГПУ|видеокарт\w*)|\butiliza(?:ci[óo]n|[çc][ãa]o)\s+d[eao]\s+(?:la\s+)?GPU"),
     " GPU utilization "),
    (r"利用率|使用率|使用効率|稼働率|사용률|이용률|утилизаци\w*|\butilizaci[óo]n\b|\butiliza[çc][ãa]o\b|Auslastung",
     " utilization "),
    ((r"(?:波动|忽高忽低|时高时低|上下(?:波动|跳动?))(?:非常|很|特别|比较)?(?:大|厉害)?|変動(?:が(?:大きい|激しい))?|乱高下"
     r"|요동\w{0,3}|들쭉날쭉|\bскач\w*|\bколебл\w*|\bfluct[uú]a\w*|\bschwank\w*"),
     " fluctuates "),
    # A run that can only use the processor: "只能用 CPU 跑", "GPU 用不上", "没用上 GPU".
    ((r"只能(?:用|在)\s*CPU\s*(?:上)?(?:跑|训练|运行)|(?:GPU|显卡)\s*(?:完全|根本)?(?:用不上|没(?:有)?用上|没(?:有)?被?(?:用|调用)(?:到|上)?)"
     r"|(?:用不上|没(?:有)?用上)\s*(?:GPU|显卡)"), " runs on the CPU only, GPU not used "),
    # An answer that is always one class: "预测出来一直是 daisy", "都预测成同一类".
    ((r"(?:预测|分类|识别|输出)[^，,。.？?！!\n]{0,8}?(?:一直|总是|始终|都|全)(?:是|为|预测成|变成)"
     r"|(?:都|全)(?:预测|分)(?:成|为)(?:同一(?:个|类)|一类)"), " always predicts "),
    # Output that repeats itself: "回答一直在重复", "同一句话重复好几遍", "停不下来".
    ((r"(?:一直|总是|不停地?|反复|会)(?:在)?重复(?:输出|生成|回答)?|重复(?:好几|很多|多)?(?:遍|次)|停不下来"),
     " keeps repeating the same output "),
    # Two results that should agree and do not: "差得很远", "对不上".
    (r"差得?很远|相差很大|差距(?:很|非常)?大|对不上|不匹配", " differ a lot "),
    # A poor result, said plainly: "结果不是很好", "效果很差".
    (r"(?:结果|效果|精度|准确率)(?:不是很好|不太好|不好|很差|非常差|很低|极差|不理想)", " results are poor "),
    # Memory a call should have given back: "显存一直不释放", "解放されない", "не освобождается".
    ((r"(?:一直|始终|还是)?(?:不|没(?:有)?)(?:会|能)?(?:马上|立刻|立即|及时|自动)?(?:被)?释放(?:掉)?|释放不(?:了|掉)|解放されな\w{0,3}|解放されず|해제(?:가)?\s*(?:되지|안)\s*\w{0,3}"
     r"|\bне\s+освобо\w*|\bno\s+se\s+libera\w*|\bn[ãa]o\s+(?:é\s+)?liberad\w*|\bnicht\s+freigegeben\b"),
     " is not released "),
    # A result that became good or normal once something was switched: "效果马上就好了".
    ((r"(?:效果|结果|精度|准确率|性能|指标)(?:马上|立刻|一下子?|立马)?(?:就)?(?:变)?(?:好了|好很多|好多了|正常了|恢复正常)"
     r"|(?:結果|精度)(?:が)?(?:良く|正常に)な\w{0,3}|(?:결과|정확도)(?:가)?\s*(?:좋아|정상)\w{0,3}"
     r"|(?:результат\w*|точность)\s+(?:сразу\s+)?(?:стал\w*|становится)\s+(?:лучше|нормальн\w*)"),
     " results are better "),
    ((r"(?:效果|结果|精度|准确率)(?:就)?(?:很|非常|特别|极)差|(?:結果|精度)(?:が|は)?(?:すごく|とても|かなり)?悪\w{0,3}"
     r"|(?:결과|정확도)(?:가|는)?\s*(?:매우|아주|너무)?\s*(?:나쁘|나쁩|나빠)\w{0,3}|(?:результат\w*|точность)\s+(?:очень\s+)?плох\w*"),
     " results are very bad "),
    # A process the system killed: "进程被 killed 掉", "プロセスが kill された", "процесс убивается".
    ((r"被\s*(?:kill(?:ed)?|杀)(?:掉|死)?(?:了)?|(?:kill|Killed?)\s*(?:された|され)|(?:kill|Killed?)\s*(?:당|되)\w{0,3}"
     r"|\bубива\w*|\bубит\w*|\b(?:es|fue)\s+(?:matado|terminado)\b|\bwird\s+(?:gekillt|beendet)\b"),
     " is killed "),
    ((r"(?:на\s+)?(?:двух|тр[её]х|четыр[её]х|нескольких|восьми)\s+(?:GPU|ГПУ|видеокарт\w*|карт\w*)"
     r"|(?:두|세|네|여러)\s*(?:개의?\s*)?GPU|GPU\s*(?:두|세|네|여러)\s*개"),
     " on multiple GPUs "),
    (r"双卡|マルチGPU|複数(?:の)?GPU|멀티\s*GPU|다중\s*GPU", " multiple GPUs "),
    (r"シングルGPU|単一(?:の)?GPU|단일\s*GPU|싱글\s*GPU", " single GPU "),
    # A model loaded without the wrapper it was trained in ("不包一层的话"), and loading itself.
    (r"不包(?:一层)?(?:的话)?|没(?:有)?包", " without the wrapper "),
    (r"(?:加载|载入)(?:模型|权重|参数)?", " load "),
    (r"状态字典", " state_dict "),
    (r"(?:一路)?(?:降|减小|减少|调小|改小|缩小)(?:到|至)|まで(?:下げ|減らし)\w{0,3}|(?:로|으로)\s*줄",
     " lowered to "),
    # --- training set against held-out data ------------------------------------------
    # (after the precision a run trains in: 混合精度 is not an accuracy)
    (r"过拟合|過学習|過剰適合|과적합|переобуч\w*|sobreajust\w*|Überanpassung", " overfitting "),
    (r"训练集|训练数据|訓練データ|学習データ|훈련\s*(?:세트|데이터)|обучающ\w+\s+выборк\w*", " training set "),
    (r"测试集|测试数据|テストデータ|테스트\s*(?:세트|데이터)|тестов\w+\s+выборк\w*", " test set "),
    (r"准确率|正确率|精确度|精度|正解率|정확도|\bточност\w*|\bacur[áa]cia\b|\bGenauigkeit\b", " accuracy "),
    (r"最大|最高|一番(?:大きい|高い)|가장\s*(?:크|높)\w{0,2}", " highest "),
    # A line taken out of a script: "把 model.eval() 注释掉", "eval() をコメントアウト".
    (r"注释掉|注释了|去掉|删掉|コメントアウト\w{0,4}|주석\s*처리\w{0,3}|закомментир\w*", " commented out "),
    # A result that came back ("就正常了", "正常に戻った"): not "看是否正常", a check.
    (r"(?:就|又|也|都)?(?:恢复)?正常了|正常に戻っ\w{0,3}|정상으로\s*돌아\w{0,3}", " back to normal "),
)


@functools.cache
def _compiled() -> tuple[tuple[re.Pattern, str], ...]:
    """The glossary's regexes, compiled when a description is first read: a pasted
    traceback never needs them, and compiling them all costs ``diagnose`` a tenth of
    its start-up."""
    return tuple((re.compile(wording, re.IGNORECASE), english) for wording, english in _GLOSSARY)


# What NFKC leaves: the ideographic full stop and the enumeration comma.
_CJK_STOPS = str.maketrans({"。": ". ", "、": ", "})
# Traditional characters of the words above, read as the simplified ones the glossary spells
# ("顯存沒有釋放" is "显存没有释放"), and the words Taiwan uses where the mainland uses others
# (記憶體 for 内存, 顯示卡 for 显卡, 分散式 for 分布式). Japanese writes many of the same
# characters (動, 問題, 学習's 習) in words the glossary reads as they are, so a text with
# kana keeps its characters.
_KANA = re.compile(r"[\u3040-\u30ff]")
_TRADITIONAL = str.maketrans("顯記憶體釋進動張塊號沒為幾雙單續訓練斷點載權數樣隨機種與個們時長漲測試驗結變後開總還這裡佔滿準預輸損學習斂啟設調會應無處問題並於從頭錯誤報參網絡層別執緒", "显记忆体释进动张块号没为几双单续训练断点载权数样随机种与个们时长涨测试验结变后开总还这里占满准预输损学习敛启设调会应无处问题并于从头错误报参网络层别执绪")
_TAIWAN_WORDS = ((re.compile(r"记忆体"), "内存"), (re.compile(r"显示卡"), "显卡"),
                 (re.compile(r"分散式|分布式|分佈式"), "分布式"), (re.compile(r"随机数种子|乱数种子"), "随机种子"))


def in_english(text: str) -> str | None:
    """``text`` with its other-language symptom words read as English, or None when
    it has none (an English description needs no copy)."""
    text = bounded(text)
    folded = unicodedata.normalize("NFKC", text).translate(_CJK_STOPS)
    if not _KANA.search(folded):
        folded = folded.translate(_TRADITIONAL)
        for word, mainland in _TAIWAN_WORDS:
            folded = word.sub(mainland, folded)
    read = folded
    for wording, english in _compiled():
        read = wording.sub(lambda _found, said=english: f" {said.strip()} ", read)
    return read if read != text else None
