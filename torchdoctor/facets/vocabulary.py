"""The facets a symptom report can show, and reading them off a text.

Four kinds, each a question a person answering "what do you see?" answers:

* ``quantity``: what is watched (the loss, an accuracy, GPU or host memory, time,
  utilisation, gradients, the outputs, the training or the held-out set, the loader);
* ``behaviour``: how it behaves (stuck, growing, falling, NaN, zero, None, swinging,
  one answer for every input, hanging, killed, different each run, worse, apart
  between training and held-out data, uneven across cards, slow);
* ``moment``: when (from the first step, after a while, at an epoch's edge, in
  evaluation, after loading weights);
* ``setting``: what surrounds it (several GPUs, workers, half precision, the batch
  size, the rate, a seed, cuDNN, a loss function, BatchNorm, a frozen layer, ...).

Each facet is one broad regex over the description and its English copy, written
for the concept, never for one report: the knowledge base's phrases say exactly how
an entry's symptom is worded; the facets say only what a report is about, which is
what carries over to a wording nobody wrote down. They run on RE2, so a hostile
paste costs linear time.
"""

from __future__ import annotations

import functools

from torchdoctor.linear_regex import bounded, compile_linear

# (name, regex, ignore case). Names start with their kind.
# "Stuck" said of the program, not of a number: the run stopped where it was.
_HALTED = (r"\b(?:program|process|script|code|training|run|job|it|everything|kernel|notebook|worker\w*|loader|dataloader|model)"
           r"\s+(?:just\s+|always\s+|simply\s+|then\s+|still\s+)?(?:gets?|got|getting|is|was|seems?|seemed)\s+(?:to\s+(?:be|get)\s+)?stuck\b"
           r"|\bstuck (?:at|in|on|after|during|when|forever) (?:the )?(?:train|training|val|validation|test|epoch|step|iteration|batch"
           r"|first|second|end|start|beginning|backward|forward|barrier|allreduce|init)\w*")

FACETS: tuple[tuple[str, str, bool], ...] = (
    # --- quantity ------------------------------------------------------------------
    ("quantity.loss", (r"\bloss(?:es)?\b|\bcriterion\b|_loss\b"
     r"|损失|損失|손실|\bпотер[иья]\w*|\bлосс\w*|\bp[ée]rdida\b|\bperda\b|\bVerlust\w*|\bperte\b"), True),
    ("quantity.accuracy", (r"\bacc(?:uracy)?\b|_acc\b|\bprecision\b|\brecall\b|\bf1\b|\bmAP\b|\biou\b"
     r"|\bbleu\b|\bmetrics?\b|\bauc\b|\bperplexity\b|\bwer\b"), True),
    ("quantity.gpu_memory", (r"gpu memory|\bvram\b|cuda memory|nvidia-smi|memory_(?:allocated|reserved)"
     r"|max_memory|\bMiB\b|memory (?:on|of) (?:the |each |every )?(?:gpu|card)|gpu ram"), True),
    ("quantity.host_memory", (r"\bram\b|host memory|cpu memory|system memory|\brss\b|\bswap\b"
     r"|oom[- ]?killer|\bhtop\b|shared memory|/dev/shm"), True),
    ("quantity.memory", (r"\bmemory\b|\bmem\b|\bGi?B\b"
     r"|\bmemoria\b|\bmem[óo]ria\b|\bSpeicher\w*|\bm[ée]moire\b|\bпамят\w*|显存|内存|メモリ|메모리"), True),
    ("quantity.time", (r"\bspeed|\b(?:it|steps?|iters?|batch(?:es)?|samples?|imgs?|images?)/s\b|\bs/(?:it|step|iter|batch)\b|\bthroughput|seconds? (?:per|each|an?)\b"
     r"|\bper (?:epoch|iteration|step|batch)\b|\bhours?\b|\bminutes?\b|\bms\b|\blatency|\btim(?:e|ing)\b"
     r"|\b\d+(?:\.\d+)?\s?(?:s|sec|secs|seconds|mins?|minutes|h|hrs?|hours)\b|\b\d{1,2}:\d\d\b|/iter(?:ation)?\b|秒|分钟|小时|時間|시간|секунд|минут"
     r"|\bsegundos\b|\bminutos\b|\bhoras\b|\bSekunden\b|\bMinuten\b|\bStunden\b|\bsecondes\b|\bheures\b|\bчас\w*"), True),
    ("quantity.utilisation", (r"\butili[sz]ation|\butil\b|gpu usage|gpu-util|\bvolatile\b"
     r"|\d\s*%\s*(?:gpu|usage|util|load)|\bgpu\s*(?:is\s+|at\s+|was\s+|shows?\s+|是|只有|为)?\s*(?:only\s+)?\d{1,3}(?:\.\d+)?\s*%"
     r"|\busage\b|利用率|使用率|使用量|사용률|загрузк"), True),
    ("quantity.gradients", r"\bgrad(?:ient)?s?\b|\.grad\b|\bbackward\b", True),
    ("quantity.weights", r"\bweights?\b|\bparam(?:eter)?s?\b", True),
    ("quantity.outputs", r"\boutputs?\b|\bpredict(?:ion)?s?\b|\blogits?\b|\bprobabilit", True),
    ("quantity.held_out", (r"\bval(?:idation)?\b|\bval_|\btest(?:ing)? (?:set|data|loss|acc)"
     r"|\bdev set\b|\bheld[- ]out\b|\beval(?:uation)? (?:set|loss|acc)"
     r"|验证|测试|検証|テスト|검증|테스트|валидац|тест"
     r"|\bvalidaci[óo]n\b|\bvalida[çc][ãa]o\b|\bValidierung\w*\b|\bprueba\b|\bteste\b"), True),
    ("quantity.training", (r"\btrain(?:ing)?\b|\btrain_"
     r"|训练|訓練|学習|학습|обучени"
     r"|\bentrenamiento\b|\bentrenar\b|\btreinamento\b|\btreino\b|\btreinar\b|\btrainieren\b|\bentra[îi]nement\b|\bentra[îi]ner\b"), True),
    ("quantity.loader", r"\bdata ?loader\b|\bdataset\b|__getitem__|\bcollate", True),
    # --- behaviour -----------------------------------------------------------------
    ("behaviour.stuck", (r"\bstuck\b|\bnot (?:decreas|chang|improv|go(?:ing)? down|mov|learn|converg|drop)"
     r"|(?:does|do|did|is|was|are|were)(?:n't| not) (?:decreas|chang|improv|go down|go up|move|learn|converg|drop)"
     r"|\bplateau|\bstays?\b|\bstayed\b|\bflat\b|\bconstant\b|\bsame (?:value|number|loss|accuracy)"
     r"|\bremains?\b|\bno (?:improvement|progress|learning|change)\b|\bnever (?:decreas|improv|chang|learn)"
     r"|\bsaturat|\bhovers?\b|\baround the same\b|\bwon't (?:budge|go down|decrease|learn|change)"
     r"|不下降|不降|降不下去|不变|没变化|不收敛|不学习|下がらない|変わらない|줄지 않|변하지 않|не уменьша|не меня|не обуча"
     r"|\bno (?:baja|disminuye|mejora|cambia|aprende)\b|\bse estanca\w*|\bestancad\w*|\bn[ãa]o (?:diminui|cai|melhora|muda|aprende)\b|\bestagnad\w*|\bsinkt nicht\b|\bbleibt (?:bei|gleich|konstant|stehen)\b|\bstagniert\b|\bne (?:diminue|baisse|change|s'am[ée]liore) pas\b|\bstagne\b|\breste (?:bloqu|constant)\w*"), True),
    ("behaviour.growing", (r"\bgrow|\bgrew\b|\brose\b|\bincreas|\bleak|\baccumulat|\bgoes up\b|\bgoing up\b|\bwent up\b"
     r"|\brises?\b|\brising\b|\bballoon|\bclimb|\bkeeps? (?:going up|rising|growing|increasing)"
     r"|累积|累加|往上涨|上涨|增长|增加|变大|越来越|涨|増え|増加|증가|늘어|раст[её]т|увеличива"
     r"|\baumenta\w*|\bcrece\w*|\bcresce\w*|\bsteigt\b|\bw[äa]chst\b|\baugmente\w*"), True),
    ("behaviour.falling", (r"\bdecreas|\bdrops?\b|\bdropped\b|\bgoes down\b|\bwent down\b|\bfalls?\b"
     r"|\bfell\b|\breduc|\blower\b|\bshrink"
     r"|下降|降低|减少|減少|下がる|감소|줄어|уменьша|пада"), True),
    ("behaviour.nan", (r"(?:^|[^a-z])nans?(?:$|[^a-z])|\binf\b|\binfinity\b|\bdiverg|\bexplod|\bblows? up\b"
     r"|\bblew up\b"
     r"|\bнан\b"), True),
    ("behaviour.zero", r"\bzero(?:s|es)?\b|\b0\.0+\b|\ball 0s?\b", True),
    ("behaviour.none", r"\bNone\b|\bNoneType\b", False),
    ("behaviour.swinging", (r"\bfluctuat|\boscillat|\bjump(?:s|ed|ing)?\b|\bspik(?:e|es|ed|ing|y)\b|\bunstable\b|\bnoisy\b"
     r"|\berratic|\bbounc|\bup and down\b|\bzig"), True),
    ("behaviour.one_answer", (r"same (?:output|prediction|result|class|label|value)s? (?:for|on|regardless)"
     r"|\balways (?:predicts?|outputs?|returns?|gives?|the same)\b|\bonly (?:predicts?|outputs?) (?:one|a single|the same)"
     r"|\b(?:all|every) (?:outputs?|predictions?) (?:are|is|were) (?:the same|identical|0|zero)"
     r"|\bconstant (?:output|prediction)|\bone class\b|\bsame class\b|\bidentical\b"), True),
    ("behaviour.hangs", (r"\bhangs?\b|\bhanging\b|\bhung\b|\bfreez|\bfroze|\bdeadlock|\bnever (?:returns?|finish|ends?|starts?)"
     r"|\bno progress\b|\bwaits? forever\b|\bforever\b|\bunresponsive|\bnothing happens\b|\bsits? there\b"
     r"|\bnothing (?:is |gets )?printed\b|\bno (?:output|step|iteration|batch)s? (?:ever|at all)\b"
     r"|\bnever (?:gets|got|get) past\b|\b(?:does|did)(?:n't| not) (?:start|proceed|continue|go (?:any ?)?further|move on)\b"
     r"|\b(?:gets?|got|is|was|becomes?) blocked\b|\bblocks? (?:forever|there|here)\b|\bno further\b|\?it/s\]"
     r"|" + _HALTED + r"|\bno logs?\b|\bpauses?\b|\bpaused\b|卡住|卡死|卡在|不动了|停住|停顿|停很久|停了很久|固まる|止まる|멈춰|멈춤|зависа"
     r"|\bse (?:cuelga|congela|bloquea|queda colgad\w*)|\btrava\w*|\bcongela\w*|\bh[äa]ngt\b|\bfriert ein\b|\bbloqu[ée]\b|\bse fige\b|\bзавис\w*"), True),
    ("behaviour.killed", (r"\bcrash|\bkilled\b|\bsegfault|\bsegmentation fault|\bdies\b|\bdied\b|\bterminat"
     r"|\baborted\b|\bcore dumped\b"), True),
    ("behaviour.out_of_memory", (r"\bout of memory\b|\bOOMs?\b|\bruns? out of (?:gpu |cuda )?memory"
     r"|溢出|爆显存|显存不足|内存不足|メモリ不足|메모리\s*부족|нехватк\w* памяти"
     r"|\bsin memoria\b|\bsem mem[óo]ria\b|\bSpeicher (?:ist )?voll\b|\bm[ée]moire insuffisante\b|\bmanque de m[ée]moire\b"), True),
    ("behaviour.not_released", (r"\bnot (?:released|freed|deallocated|returned)|\bstill (?:used|occupied|allocated|reserved|there|shows?)"
     r"|\bdoes(?:n't| not) (?:release|free|go down|drop)|\bnever (?:released|freed)|\bfree (?:the|up) (?:gpu )?memory"
     r"|\bafter (?:del|deleting|empty_cache)"), True),
    ("behaviour.impossible_value", (r"\baccuracy (?:of |is |was |reaches |goes (?:over|above) )?(?:1\d\d\d?|[2-9]\d\d)(?:\.\d+)?\s?%"
     r"|\b(?:over|above|more than|greater than) 100\s?%|\bnegative loss\b|\bloss (?:is|goes|becomes) negative"), True),
    ("behaviour.gpu_unused", (r"\bis_available\(\)\s*(?:returns |is |=+ ?)?False\b|\b(?:runs?|running|trains?|training) on (?:the )?cpu\b"
     r"|\bgpu (?:is )?(?:not|never) (?:used|utili[sz]ed|detected)|\bnot using (?:the )?gpu\b|\bno gpu\b"
     r"|\buses? (?:the )?cpu\b|\bcpu only\b|\bcpu instead\b|\bnot (?:on|using) (?:the )?gpu\b|用的是\s*cpu|在\s*cpu\s*上"), True),
    ("behaviour.differs_across_runs", (r"\bdifferent (?:results?|outputs?|values?|numbers|accuracy|loss)"
     r"|\bnot reproducible|\bnon-?determinis|\breproducib|\bvar(?:y|ies) (?:between|across|from) runs?"
     r"|\beach run\b|\bevery run\b|\bsame seed\b|\bfrom run to run\b|\brun to run\b"
     r"|\bresultados (?:diferentes|distintos)\b|\bunterschiedliche Ergebnisse\b|\br[ée]sultats diff[ée]rents\b|\bразные результаты\b|结果不一样|结果不同|每次(?:运行|跑)?(?:的)?结果|結果が(?:違う|異なる|変わる)|결과가\s*(?:다르|달라)"), True),
    ("behaviour.worse", (r"\bworse\b|\bdegrad|\bdrops? (?:in|of)\b|\bmuch lower\b|\bpoor(?:ly)?\b"
     r"|\bbad (?:results?|accuracy|performance)|\bgarbage\b|\brandom (?:results?|predictions?|outputs?|guess)"), True),
    ("behaviour.better", r"\bbetter\b|\bhigher than\b|\bimprov(?:es|ed)\b|\bworks? fine\b", True),
    ("behaviour.apart", (r"\boverfit|\bgenerali[sz]|\bgap between\b|\b(?:train|training) (?:acc|accuracy|loss)\b"
     r".{0,60}\b(?:val|validation|test)\b"
     r"|\b(?:lower|higher|better|worse) than (?:the )?(?:train|training|val|validation|test)\b|\b(?:train|training)(?: set)?\b[^.\n]{0,40}\b(?:lower|higher|better|worse)\b[^.\n]{0,40}\b(?:val|validation|test)"), True),
    # Which way a comparison of the training and the held-out figures goes: held-out
    # data doing better (regularisation on in training only) or worse (overfitting).
    ("behaviour.held_out_better", r"\b(?:val|validation|test|held[- ]out|eval)\w*\b[^.\n]{0,40}\bbetter\b[^.\n]{0,30}\btrain\w*|\btrain\w*\b[^.\n]{0,40}\bworse\b[^.\n]{0,30}\b(?:val|validation|test|held[- ]out|eval)\w*|\b(?:val|validation|test|held[- ]out|eval)\w* loss\b[^.\n]{0,12}\b(?:lower|smaller|less)\b[^.\n]{0,12}\btrain\w*|\btrain\w* loss\b[^.\n]{0,12}\b(?:higher|larger|bigger|greater)\b[^.\n]{0,12}\b(?:val|validation|test|held[- ]out|eval)\w*|\b(?:val|validation|test|held[- ]out|eval)\w* acc\w*\b[^.\n]{0,12}\bhigher\b[^.\n]{0,12}\btrain\w*|\btrain\w* acc\w*\b[^.\n]{0,12}\blower\b[^.\n]{0,12}\b(?:val|validation|test|held[- ]out|eval)\w*", True),
    ("behaviour.held_out_worse", r"\b(?:val|validation|test|held[- ]out|eval)\w*\b[^.\n]{0,40}\b(?:worse|poorer)\b[^.\n]{0,30}\btrain\w*|\btrain\w*\b[^.\n]{0,40}\bbetter\b[^.\n]{0,30}\b(?:val|validation|test|held[- ]out|eval)\w*|\b(?:val|validation|test|held[- ]out|eval)\w* loss\b[^.\n]{0,12}\b(?:higher|larger|bigger|greater)\b[^.\n]{0,12}\btrain\w*|\btrain\w* loss\b[^.\n]{0,12}\b(?:lower|smaller|less)\b[^.\n]{0,12}\b(?:val|validation|test|held[- ]out|eval)\w*|\b(?:val|validation|test|held[- ]out|eval)\w* acc\w*\b[^.\n]{0,12}\blower\b[^.\n]{0,12}\btrain\w*|\btrain\w* acc\w*\b[^.\n]{0,12}\bhigher\b[^.\n]{0,12}\b(?:val|validation|test|held[- ]out|eval)\w*", True),
    ("behaviour.uneven_cards", (r"\b(?:gpu|cuda|card|device)\s?:?\s?0\b|\bfirst (?:gpu|card|device)\b|\bmain gpu\b"
     r"|\bunbalanced\b|\bimbalanc(?:e|ed) (?:memory|load|usage)|\bmore memory (?:on|than)\b|\buneven"), True),
    ("behaviour.slow", (r"\bslow|\btakes? (?:too |so |very )?long|\bbottleneck|\bsluggish|\bwaiting for (?:data|the)"
     r"|\bpainfully\b|\bnot (?:even )?\d(?:\.\d)?x faster\b|\bnot (?:much )?faster\b|\b(?:barely|hardly|no) faster\b|慢|遅い|遅く|느리|медленн"
     r"|\blent[oa]s?\b|\bdevagar\b|\blangsam\w*|\blente?s?\b"), True),
    # --- moment --------------------------------------------------------------------
    ("moment.first_step", (r"\bfrom the (?:start|beginning|first)|\bfirst (?:iteration|step|batch|forward)\b"
     r"|\bstep 0\b|\bimmediately\b|\bright away\b|\bat the (?:very )?(?:start|beginning)\b|\bfrom step 1\b"), True),
    ("moment.after_a_while", (r"\bafter (?:about |around |some |a few |several |\d[\d,]*\s*)(?:steps?|epochs?|iterations?"
     r"|iters?|batches|hours?|minutes?)\b|\bafter (?:a while|some time|a few)|\bat (?:epoch|step|iteration) \d"
     r"|\beventually\b|\bsuddenly\b"), True),
    ("moment.epoch_edge", (r"\b(?:start|beginning|begin|end) of (?:each|every|an?|the) epoch|\bevery epoch\b"
     r"|\bbetween epochs\b|\beach epoch\b|\bnew epoch\b|\bsecond epoch\b"
     r"|\bbetween (?:\w+ ){0,3}epochs\b|\bend of (?:an? |each |every |some )?epochs?\b|\bepochs? (?:ends?|starts?|begins?)\b|\b(?:after|before) (?:each|every) epoch\b|epoch\s*(?:之间|结束|末尾|的末尾|开始)|每个\s*epoch|每一?轮"), True),
    ("moment.evaluation", (r"\beval\(\)|\.eval\b|\beval(?:uation)? mode\b|\binference\b|\btest time\b"
     r"|\bpredict(?:ing)?\b|\bno_grad\b|\btrain\(\)|\bdeploy"
     r"|验证的时候|推理|推論|추론|инференс"), True),
    ("moment.second_step", r"\bsecond (?:iteration|step|batch|forward|backward|time|call)\b|\b2nd (?:iteration|step|batch)\b", True),
    ("moment.after_loading", (r"\bresum|\bload(?:ed|ing)? (?:the |my |a )?(?:checkpoint|model|weights|state_dict|saved)"
     r"|\bload_state_dict\b|\bsaved model\b|\breload|\brestor|\btorch\.load\b|\bcheckpoint"), True),
    # --- setting -------------------------------------------------------------------
    ("setting.several_gpus", r"\bmulti-?gpu|\bmultiple gpus\b|\b\d+ ?gpus\b|\bgpus\b|\bmulti-?node|\bcards\b", True),
    ("setting.dataparallel", r"\bDataParallel\b|\bnn\.DataParallel|\bDP\b", True),
    ("setting.ddp", (r"\bDistributedDataParallel\b|\bDDP\b|\bdistributed\b|\bworld_size\b|\btorchrun\b"
     r"|\btorch\.distributed\b|\bnccl\b|\branks?\b|\blocal_rank\b|\baccelerate\b|\bdeepspeed\b|\bhorovod\b"), True),
    ("setting.workers", r"\bnum_workers\b|\bworkers?\b|\bprefetch", True),
    ("setting.half_precision", (r"\bfp16\b|\bhalf\b|\bamp\b|\bautocast\b|\bmixed precision\b|\bbf16\b|\bbfloat16\b"
     r"|\bfloat16\b|\bGradScaler\b|\bapex\b"), True),
    ("setting.batch_size", r"\bbatch[ _]?size\b|\bbs\s*=", True),
    ("setting.one_sample", (r"\bbatch[ _]?size (?:of |= ?)?1\b|\bsingle (?:sample|image|example|input)\b"
     r"|\bone (?:sample|image|example) at a time\b"), True),
    ("setting.learning_rate", r"\blr\b|\blearning[ _]rate\b|\bscheduler\b|\bwarmup\b", True),
    ("setting.pretrained", r"\bfine-?tun|\btransfer learning\b|\bpre-?trained\b|\bbackbone\b", True),
    ("setting.frozen", r"\bfreez|\bfrozen\b|\brequires_grad\b", True),
    ("setting.compile", r"\btorch\.compile\b|\bcompiled?\b|\binductor\b|\bdynamo\b|\brecompil", True),
    ("setting.seed", r"\bseed|\bmanual_seed\b|\bdeterministic\b", True),
    ("setting.cudnn", r"\bcudnn\b", True),
    ("setting.benchmark", r"\bbenchmark\b", True),
    ("setting.shuffle", r"\bshuffl", True),
    ("setting.sampler", r"\bsampler\b|\bset_epoch\b", True),
    ("setting.output_activation", r"\bsoftmax\b|\bsigmoid\b|\blog_softmax\b", True),
    ("setting.cross_entropy", r"\bCrossEntropy|\bcross[- ]entropy\b|\bcross_entropy\b", True),
    ("setting.nll", r"\bNLLLoss\b|\bnll_loss\b|\bnll\b|\bnegative log", True),
    ("setting.bce", r"\bBCE(?:Loss)?\b|\bbinary[_ ]cross|\bbinary classification\b", True),
    ("setting.regression_loss", r"\bMSE|\bL1Loss\b|\bsmooth_?l1|\bhuber\b|\bregression\b", True),
    ("setting.logits_loss", r"\bBCEWithLogits|\bwith_logits\b", True),
    ("setting.clipping", r"\bclip_grad|\bclipping\b|\bgradient clip|\bmax_norm\b", True),
    ("setting.activation", r"\bsigmoid\b|\btanh\b|\brelu\b|\bactivation", True),
    ("setting.moved_to_device", r"\.cuda\(\)|\.to\((?:device|['\"]cuda)|\bto\(device\)", True),
    ("setting.batchnorm", r"\bbatch ?norm|\bBatchNorm\d?d?\b|\brunning_(?:mean|var)\b|\bmomentum\b", True),
    ("setting.dropout", r"\bdropout\b", True),
    ("setting.zero_grad", r"\bzero_grad\b|\bzero (?:the|out) (?:the )?grad", True),
    ("setting.item", r"\.item\(\)|\+= ?loss\b|\btotal_loss\b|\brunning_loss\b", True),
    ("setting.freeing", r"\bempty_cache\b|\bgc\.collect\b|\bdel\b|\bfree(?:d|ing)? (?:the |up )?(?:memory|gpu)", True),
    ("setting.cpu_and_gpu", (r"\bon (?:the )?cpu\b.{0,80}\bon (?:the )?gpu\b|\bon (?:the )?gpu\b.{0,80}\bon (?:the )?cpu\b"
     r"|\bcpu (?:vs|versus) gpu\b"), True),
    ("setting.imbalanced_data", (r"\bimbalanc|\bunbalanced (?:data|classes|dataset)|\bmajority class\b|\bminority class\b"
     r"|\brare class|\bclass weights?\b|\bpos_weight\b|\bskewed\b"), True),
    ("setting.input_scale", (r"\bnormali[sz]|\bstandardi[sz]|\bmean and std\b|\bscal(?:e|ing) (?:the )?(?:inputs?|features|data)\b"
     r"|\b0-255\b|\bToTensor\b"), True),
    ("setting.optimizer", r"\boptimi[sz]er\b|\bAdam\b|\bSGD\b|\bAdamW\b|\boptim\.", True),
    ("setting.detached", r"\bdetach|\.data\b|\bretain_graph\b|\bnumpy\(\)", True),
    ("setting.platform", r"\bwindows\b|\bjupyter\b|\bnotebook\b|\bmacos\b|\bmps\b|\bdocker\b|\bcolab\b", True),
    ("setting.augmentation", r"\bnp\.random\b|\bnumpy random\b|\baugment", True),
    ("setting.reading_files", (r"\bimages?\b|\bjpe?g\b|\bpng\b|\bPIL\b|\bopencv\b|\bcv2\b|\bdecod|\bdisk\b|\bhdf5\b"
     r"|\bh5py\b|\blmdb\b|\bread(?:ing)? (?:from )?(?:disk|files?)"), True),
    ("setting.pinned", r"\bpin_memory\b|\bnon_blocking\b", True),
    ("setting.python_objects", r"\blist of\b|\bpython list\b|\bdict\b|\bpandas\b|\bdataframe\b|\bnumpy arrays?\b", True),
    ("setting.recurrent", r"\bhidden\b|\bLSTM\b|\bGRU\b|\bRNN\b|\bbptt\b", True),
    ("setting.argmax", r"\bargmax\b|\bmax\(1\)|\btorch\.max\b|\btopk\b", True),
    ("setting.varying_shapes", (r"\bvariable (?:length|size|input)|\bdifferent (?:sizes?|shapes?|lengths?)\b"
     r"|\bdynamic shape"), True),
    ("setting.process_group", r"\btimeout|\btimed out\b|\bwatchdog\b|\bbarrier\b|\binit_process_group\b", True),
    # --- reading: what ``symptoms.readings`` found in the numbers, as its own phrases --
    ("reading.chance_level", r"a uniform guess over|accuracy stuck at chance", False),
    ("reading.nan_first_update", r"NaN from the first update on", False),
    ("reading.nan_later", r"non-finite loss after training ran a while", False),
    ("reading.oom_later", r"out of memory after a while", False),
    ("reading.loss_turned", r"loss falls, then (?:climbs back|blows up)", False),
    ("reading.levels_off", r"readings level off at a plateau", False),
    ("reading.rates_compared", r"several learning rates tried", False),
    ("reading.batch_changed", r"batch size or GPU count changed with the learning rate kept", False),
    ("reading.eval_worse", r"switching to eval mode makes the results worse", False),
    ("reading.train_far_above", r"training accuracy far above the held-out accuracy", False),
    ("reading.same_input_differs", r"inference on the same input twice gives different outputs", False),
    ("reading.batch_dependent", r"the output for one sample depends on the batch size", False),
    ("reading.seed_differs", r"same seed, different results between runs", False),
    ("reading.ranks_on_gpu0", r"every rank's process listed on GPU 0", False),
    ("reading.gpu0_heavier", r"GPU 0 holds much more memory than the other GPUs", False),
    ("reading.utilisation", r"(?:low|fluctuating) GPU utilization", False),
    ("reading.kept_tensors", r"loss tensor accumulated without \.item\(\)|model outputs appended to a list as tensors", False),
    ("reading.before_0_4", r"code from before torch 0\.4 run on a later torch", False),
    ("reading.narrow_head", r"fewer outputs than classes", False),
    ("reading.layer_in_forward", r"layer created inside forward", False),
    ("reading.half_nan", r"NaN under mixed precision", False),
    ("reading.trained_elsewhere", r"weights trained elsewhere give wrong classes", False),
)
NAMES: tuple[str, ...] = tuple(name for name, _regex, _case in FACETS)
# A report tells a symptom when it names something watched, how something behaves or
# what its numbers say (a reading), and says at least this much in all: one facet
# alone ("memory", "slow") is a word, not a report.
_KINDS_OF_A_SYMPTOM = ("quantity.", "behaviour.", "reading.")
_FEWEST_FACETS = 2


@functools.cache
def _compiled() -> tuple[tuple[str, object], ...]:
    """The facets' programs, built when a description first needs them."""
    return tuple((name, compile_linear(regex, ignore_case=ignore_case))
                 for name, regex, ignore_case in FACETS)


@functools.cache
def _halted() -> object:
    return compile_linear(_HALTED, ignore_case=True)


def facets_of(text: str) -> frozenset[str]:
    """The facets ``text`` shows (read it through ``symptoms.described`` first, so the
    words of other languages and the readings of its numbers count)."""
    text = bounded(text)
    # A run that got stuck says nothing about a number that will not move.
    unhalted = _halted().sub(" ", text)
    return frozenset(name for name, program in _compiled()
                     if program.search(unhalted if name == "behaviour.stuck" else text))


def tells_a_symptom(found: frozenset[str]) -> bool:
    """Whether facets are enough of a report to rank entries on (see _FEWEST_FACETS)."""
    return len(found) >= _FEWEST_FACETS and any(name.startswith(_KINDS_OF_A_SYMPTOM) for name in found)
