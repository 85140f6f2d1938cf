/* tests/unit/test_import.c — the readers of users' own files, through import_parse: a launch script's
 * words (quotes, line continuations, comments, NAME=value then $NAME / ${NAME}, --flag=value, a quoted
 * "--flag value" array element), Megatron-LM's GPT defaults where the file is silent, the flags each
 * setting becomes, and errors naming the file, line and setting. The expected flags and dimensions are
 * read off the texts below by hand. */
#include <stdio.h>
#include <string.h>

#include "import/import.h"
#include "support/import_fixtures.h"
#include "test.h"

static void test_script_words(void)
{
    const char *text = "#!/bin/bash\n"
                       "TP=2   # tensor parallel\n"
                       "LAYERS=${TP}\n"
                       "ARGS=(\n"
                       "    --num-layers 4 \\\n"
                       "    --hidden-size=256\n"
                       "    \"--num-attention-heads 8\"\n"
                       "    --tensor-model-parallel-size ${TP}\n"
                       "    # --pipeline-model-parallel-size 4\n"
                       "    --seq-length '128' --vocab-size 1000\n"
                       "    --sequence-parallel\n"
                       "    --bf16\n"
                       ")\n"
                       "torchrun --nproc_per_node $TP --nnodes 2 pretrain_gpt.py ${ARGS[@]}\n";
    ImportResult r;
    Err e;
    Status st = import_parse("run.sh", text, strlen(text), IMPORT_AUTO, &r, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    if (st) return;
    CHECK(r.fmt == IMPORT_MEGATRON);
    /* the commented pipeline flag is gone; world 2 x 2 = 4 GPUs; no global batch: mbs x DP */
    CHECKF(!strcmp(fx_import_flags(&r), "--stack megatron-lm --tp 2 --seq 128 --sp --gpus 4 --recipe megatron-bf16"),
           "%s", fx_import_flags(&r));
    CHECK(r.have_model);
    CHECK_EQ_U64(r.model.layers, 4);
    CHECK_EQ_U64(r.model.hidden, 256);
    CHECK_EQ_U64(r.model.heads, 8);
    CHECK_EQ_U64(r.model.kv_heads, 8);      /* no GQA */
    CHECK_EQ_U64(r.model.head_dim, 32);     /* 256 / 8 */
    CHECK_EQ_U64(r.model.ffn_hidden, 1024); /* 4 x 256, GeLU */
    CHECK_EQ_U64(r.model.seq_len, 128);     /* no --max-position-embeddings: the sequence */
    CHECK(r.model.norm == NORM_LAYERNORM && r.model.mlp == MLP_GELU && r.model.pos == POS_LEARNED);
    CHECK(r.model.tied_embeddings && r.model.linear_bias);
    CHECK(!strcmp(r.model.name, "custom-4l-256h"));
    CHECK_EQ_INT(r.model_line, 5); /* --num-layers */
    CHECK(r.gbs_per_dp);
    CHECK_EQ_U64(r.world, 4);
    CHECK_EQ_INT(r.world_line, 14);
    import_free(&r);
}

static void test_llama_defaults(void)
{
    /* SwiGLU without an FFN size: int(4 x 4096 x 2/3 / 64) x 64 = int(170.67) x 64 = 10880 */
    const char *text = "--num-layers 2 --hidden-size 4096 --num-attention-heads 32 --group-query-attention "
                       "--num-query-groups 8 --swiglu --normalization RMSNorm --position-embedding-type rope "
                       "--untie-embeddings-and-output-weights --disable-bias-linear --max-position-embeddings 8192 "
                       "--vocab-size 128256 --fp8-format hybrid --fp8-recipe tensorwise "
                       "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1 "
                       "--use-distributed-optimizer --overlap-grad-reduce --grad-reduce-in-bf16 --global-batch-size 64";
    ImportResult r;
    Err e;
    Status st = import_parse("args.txt", text, strlen(text), IMPORT_MEGATRON, &r, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    if (st) return;
    CHECK_EQ_U64(r.model.ffn_hidden, 10880);
    CHECK_EQ_U64(r.model.kv_heads, 8);
    CHECK_EQ_U64(r.model.head_dim, 128);
    CHECK(r.model.norm == NORM_RMSNORM && r.model.mlp == MLP_SWIGLU && r.model.pos == POS_ROPE);
    CHECK(!r.model.tied_embeddings && !r.model.linear_bias);
    CHECK(!r.gbs_per_dp);
    CHECKF(!strcmp(fx_import_flags(&r), "--stack megatron-lm --dist-opt --overlap-dp on --main-grad bf16 --gbs 64 "
                                        "--recompute full --recipe te-fp8-current"),
           "%s", fx_import_flags(&r));
    import_free(&r);
}

static void test_bridge_and_titan(void)
{
    const char *yaml = "model:\n  num_layers: 2\n  hidden_size: 64\n  num_attention_heads: 4\n  num_query_groups: 2\n"
                       "  seq_length: 32\n  vocab_size: 100\n  share_embeddings_and_output_weights: false\n"
                       "  gradient_accumulation_fusion: false\n  tensor_model_parallel_size: 2\n"
                       "train:\n  micro_batch_size: 2\n  global_batch_size: 16\n"
                       "ddp:\n  grad_reduce_in_fp32: true\n"
                       "mixed_precision: bf16_mixed\n";
    ImportResult r;
    Err e;
    Status st = import_parse("cfg.yaml", yaml, strlen(yaml), IMPORT_AUTO, &r, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    if (!st) {
        CHECK(r.fmt == IMPORT_BRIDGE);
        CHECK_EQ_U64(r.model.kv_heads, 2); /* num_query_groups alone means GQA in TransformerConfig */
        CHECK(!r.model.tied_embeddings);
        CHECKF(!strcmp(fx_import_flags(&r),
                       "--stack megatron-core --seq 32 --grad-acc-fusion off --tp 2 --mbs 2 --gbs 16 "
                       "--main-grad fp32 --recipe megatron-bf16"),
               "%s", fx_import_flags(&r));
        import_free(&r);
    }
    /* Megatron-Bridge's mixed-precision recipe names: every FP8 one but subchannel sets fp8_param_gather True
     * (src/megatron/bridge/training/mixed_precision.py), so it names the recipe's -param row */
    static const struct {
        const char *name, *recipe;
    } mp[] = {{"bf16_mixed", "megatron-bf16"},
              {"bf16_with_fp8_delayed_scaling_mixed", "te-fp8-param"},
              {"bf16_with_fp8_current_scaling_mixed", "te-fp8-current-param"},
              {"bf16_with_mxfp8_mixed", "mxfp8-param"},
              {"bf16-with-mxfp8-mixed", "mxfp8-param"}, /* the hyphen spelling it also registers */
              {"bf16_with_fp8_subchannel_scaling_mixed", "deepseek-v3"}};
    /* blockwise (subchannel) is the deepseek-v3 recipe, whose Adam moments are BF16: the precision-aware optimizer's
     * as Megatron-Bridge's YAML dump writes a torch.dtype */
    static const char pao[] = "ddp:\n  use_distributed_optimizer: true\noptimizer:\n"
                              "  use_precision_aware_optimizer: true\n  exp_avg_dtype:\n    _target_: torch.bfloat16\n"
                              "    _call_: false\n  exp_avg_sq_dtype:\n    _target_: torch.bfloat16\n";
    for (size_t i = 0; i < sizeof mp / sizeof *mp; i++) {
        char text[512];
        snprintf(text, sizeof text, "train:\n  micro_batch_size: 1\nmixed_precision: %s\n%s", mp[i].name,
                 strstr(mp[i].name, "subchannel") ? pao : "");
        st = import_parse("mp.yaml", text, strlen(text), IMPORT_AUTO, &r, &e);
        CHECKF(st == ST_OK, "%s: %s", mp[i].name, e.msg);
        if (st) continue;
        const char *rec = NULL;
        for (int k = 0; k + 1 < r.argc; k++)
            if (!strcmp(r.argv[k], "--recipe")) rec = r.argv[k + 1];
        CHECKF(rec && !strcmp(rec, mp[i].recipe), "%s: recipe %s, want %s", mp[i].name, rec ? rec : "none",
               mp[i].recipe);
        CHECK_EQ_INT(r.recipe_line, 3);
        import_free(&r);
    }
    const char *toml = "[model]\nname = \"llama3\"\nflavor = \"70B\"\nconverters = [\"float8\"]\n"
                       "[float8]\nrecipe_name = \"rowwise\"\n"
                       "[parallelism]\ndata_parallel_shard_degree = 4\ntensor_parallel_degree = 2\n"
                       "[training]\nlocal_batch_size = 3\nseq_len = 4096\n"
                       "[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"op\"\n"
                       "[compile]\nenable = true\n";
    st = import_parse("job.toml", toml, strlen(toml), IMPORT_AUTO, &r, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    if (!st) {
        CHECK(!strcmp(r.model_name, "llama3-70b"));
        CHECK_EQ_INT(r.model_line, 3);
        CHECKF(!strcmp(fx_import_flags(&r),
                       "--stack torchtitan --tp 2 --mbs 3 --seq 4096 --dp 4 --zero 3 --recompute op "
                       "--recipe torchao-fp8-rowwise"),
               "%s", fx_import_flags(&r));
        import_free(&r);
    }
}

static const char *recipe_of(const ImportResult *r)
{
    for (int k = 0; k + 1 < r->argc; k++)
        if (!strcmp(r->argv[k], "--recipe")) return r->argv[k + 1];
    return "none";
}

/* --fp8-param-gather (Megatron-LM) and fp8_param / fp8_param_gather (Megatron-Bridge's ConfigContainer) with
 * each FP8 scaling: {file, text, the recipe, the note of the param setting ("" = not checked), ignored} */
static void test_fp8_param_gather(void)
{
    static const char bf16[] = "--bf16 "; /* no model: the flags alone */
    static const struct {
        const char *name, *text, *recipe, *note;
        int ignored;
    } c[] = {
        {"a.sh", "--fp8-format hybrid --fp8-param-gather", "te-fp8-param", "FP8 weights", 0},
        {"b.sh", "--fp8-format hybrid --fp8-recipe delayed --fp8-param-gather", "te-fp8-param", "FP8 weights", 0},
        {"c.sh", "--fp8-format hybrid --fp8-recipe tensorwise --fp8-param-gather", "te-fp8-current-param",
         "FP8 weights", 0},
        {"d.sh", "--fp8-param-gather --fp8-format e4m3 --fp8-recipe mxfp8", "mxfp8-param", "FP8 weights", 0},
        {"e.sh", "--fp8-format e4m3 --fp8-recipe mxfp8", "mxfp8", "", 0},
        {"f.sh", "--fp8-format hybrid --fp8-recipe tensorwise", "te-fp8-current", "", 0},
        /* blockwise is the deepseek-v3 recipe: its BF16 Adam moments are the precision-aware optimizer's */
        {"g.sh",
         "--fp8-format hybrid --fp8-recipe blockwise --fp8-param-gather --use-distributed-optimizer "
         "--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16",
         "deepseek-v3", "ignored: blockwise scaling has no FP8-parameter recipe", 1},
        {"h.sh", "--fp8-param-gather", "megatron-bf16", "ignored: no FP8 format given", 1},
        {"i.yaml",
         "train:\n  micro_batch_size: 1\nmixed_precision:\n  bf16: true\n"
         "  fp8: hybrid\n  fp8_recipe: tensorwise\n  fp8_param_gather: true\n",
         "te-fp8-current-param", "FP8 weights", 0},
        {"j.yaml",
         "model:\n  fp8_param: false\n"
         "mixed_precision:\n  bf16: true\n  fp8: e4m3\n  fp8_recipe: mxfp8\n",
         "mxfp8", "ignored: false", 1},
        {"k.yaml",
         "model:\n  fp8: e4m3\n"
         "  fp8_recipe: mxfp8\n  bf16: true\nddp:\n  fp8_param_gather: true\n",
         "mxfp8-param", "FP8 weights", 0},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char text[512];
        int yaml = strstr(c[i].name, ".yaml") != NULL;
        snprintf(text, sizeof text, "%s%s\n", yaml ? "" : bf16, c[i].text);
        ImportResult r;
        Err e;
        Status st = import_parse(c[i].name, text, strlen(text), IMPORT_AUTO, &r, &e);
        CHECKF(st == ST_OK, "%s: %s", c[i].name, e.msg);
        if (st) continue;
        CHECKF(!strcmp(recipe_of(&r), c[i].recipe), "%s: recipe %s, want %s", c[i].name, recipe_of(&r), c[i].recipe);
        const ImportNote *n = NULL;
        for (size_t k = 0; k < r.nnotes; k++)
            if (strstr(r.notes[k].key, "fp8-param") || strstr(r.notes[k].key, "fp8_param")) n = &r.notes[k];
        if (*c[i].note) {
            CHECKF(n && !strncmp(n->mapped, c[i].note, strlen(c[i].note)) && n->ignored == c[i].ignored,
                   "%s: note '%s' (ignored %d), want '%s' (%d)", c[i].name, n ? n->mapped : "none", n ? n->ignored : -1,
                   c[i].note, c[i].ignored);
        } else {
            CHECKF(!n, "%s: a note for a setting the file does not have", c[i].name);
        }
        import_free(&r);
    }
}

/* Mixture-of-experts, latent-attention and MTP settings (Megatron-LM arguments, Megatron-Bridge fields, torchtitan
 * names): {file, text, the flags, the model's expert / latent / MTP fields as "E k shared effn dense router groups
 * gtopk | q_lora kv_lora nope rope v head_dim kv_heads | mtp"}, read off each text by hand. */
static void test_moe(void)
{
    static const char dims[] = "--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 128 "
                               "--vocab-size 1000 --ffn-hidden-size 512 --swiglu --bf16\n";
    static const struct {
        const char *name, *text, *flags, *model;
    } c[] = {
        /* shared 128 / expert FFN 64 = 2 experts; ([0]*1+[1]*3) = 1 dense layer then 3 MoE layers (of 4); sigmoid with
         * bias, 4 groups of 16 / 4 = 4 experts, top-4 within 2 groups (4 <= 2 x 4); flex's default backend deepep;
         * MLA: q_lora none, kv_lora 64, qk 128 + rope 64 = head_dim 192, v 128 (arguments.py's defaults), kv_heads =
         * heads 8; the modules in bit order (mla_up_proj, moe_act, layernorm, core_attn, ...) stand for selective */
        {"a.sh",
         "--num-experts 16 --moe-router-topk 4 --moe-ffn-hidden-size 64 --moe-shared-expert-intermediate-size 128\n"
         "--moe-layer-freq \"([0]*1+[1]*3)\" --moe-router-num-groups 4 --moe-router-group-topk 2\n"
         "--moe-router-score-function sigmoid --moe-router-enable-expert-bias --moe-grouped-gemm\n"
         "--moe-token-dispatcher-type flex --moe-expert-capacity-factor 1.25 --moe-permute-fusion\n"
         "--multi-latent-attention --kv-lora-rank 64 --mtp-num-layers 1\n"
         "--expert-model-parallel-size 4 --expert-tensor-parallel-size 2\n"
         "--recompute-granularity selective --recompute-modules moe_act mla_up_proj core_attn\n"
         "--overlap-moe-expert-parallel-comm --moe-deepep-num-sms 24\n",
         "--stack megatron-lm --seq 128 --recompute-modules mla_up_proj,moe_act,core_attn --recipe megatron-bf16 "
         "--ep 4 --etp 2 --moe-dispatcher deepep --overlap-ep 1 --ep-comm-sms 24 --moe-capacity 1.25",
         "16 4 2 64 1 sigmoid 4 2 | 0 64 128 64 128 192 8 | 1"},
        /* Megatron's defaults: top-2, the expert FFN = --ffn-hidden-size 512, softmax, every layer MoE (freq 1);
         * core_attn alone is --recompute selective */
        {"b.sh",
         "--num-experts 8 --moe-layer-freq 1 --moe-grouped-gemm --moe-token-dispatcher-type alltoall\n"
         "--recompute-granularity selective --recompute-modules core_attn\n",
         "--stack megatron-lm --seq 128 --recompute selective --recipe megatron-bf16 --moe-dispatcher alltoall",
         "8 2 0 512 0 softmax 0 0 | 0 0 0 0 0 32 8 | 0"},
        /* Megatron-Bridge: a YAML list [0, 1, 1, 1] is 1 dense layer; recompute_modules [moe]; flex + hybridep; a null
         * q_lora_rank is none; sigmoid without bias; kv_channels 16 becomes MLA's head_dim 32 + 16 = 48 */
        {"c.yaml",
         "model:\n  num_layers: 4\n  hidden_size: 256\n  num_attention_heads: 8\n  seq_length: 128\n"
         "  vocab_size: 1000\n  ffn_hidden_size: 512\n  gated_linear_unit: true\n  kv_channels: 16\n"
         "  num_moe_experts: 8\n  moe_router_topk: 2\n  moe_ffn_hidden_size: 128\n  moe_layer_freq: [0, 1, 1, 1]\n"
         "  moe_router_score_function: sigmoid\n  moe_grouped_gemm: true\n  moe_token_dispatcher_type: flex\n"
         "  moe_flex_dispatcher_backend: hybridep\n  multi_latent_attention: true\n  q_lora_rank: null\n"
         "  kv_lora_rank: 32\n  qk_head_dim: 32\n  qk_pos_emb_head_dim: 16\n  v_head_dim: 32\n"
         "  expert_tensor_parallel_size: 1\n  expert_model_parallel_size: 8\n"
         "  recompute_granularity: selective\n  recompute_modules: [moe]\n"
         "mixed_precision: bf16_mixed\n",
         "--stack megatron-core --seq 128 --recompute-modules moe --recipe megatron-bf16 --ep 8 --etp 1 "
         "--moe-dispatcher hybridep",
         "8 2 0 128 1 sigmoid 0 0 | 0 32 32 16 32 48 8 | 0"},
        /* a dense model: the dispatcher is noted ignored, no MoE flag; --expert-model-parallel-size 1 stays --ep 1 */
        {"d.sh", "--moe-token-dispatcher-type alltoall --expert-model-parallel-size 1\n",
         "--stack megatron-lm --seq 128 --recipe megatron-bf16 --ep 1", "0 0 0 0 0 none 0 0 | 0 0 0 0 0 32 8 | 0"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char text[2048];
        snprintf(text, sizeof text, "%s%s", strstr(c[i].name, ".yaml") ? "" : dims, c[i].text);
        ImportResult r;
        Err e;
        Status st = import_parse(c[i].name, text, strlen(text), IMPORT_AUTO, &r, &e);
        CHECKF(st == ST_OK, "%s: %s", c[i].name, e.msg);
        if (st) continue;
        CHECKF(!strcmp(fx_import_flags(&r), c[i].flags), "%s: %s", c[i].name, fx_import_flags(&r));
        const ModelSpec *m = &r.model;
        static const char *const router[] = {"none", "softmax", "sigmoid"};
        char got[160];
        snprintf(got, sizeof got, "%u %u %u %u %u %s %u %u | %u %u %u %u %u %u %u | %u", m->experts,
                 m->experts_per_token, m->shared_experts, m->expert_ffn, m->dense_layers, router[m->router],
                 m->router_groups, m->router_group_topk, m->q_lora_rank, m->kv_lora_rank, m->qk_nope_head_dim,
                 m->qk_rope_head_dim, m->v_head_dim, m->head_dim, m->kv_heads, m->mtp_layers);
        CHECKF(!strcmp(got, c[i].model), "%s: model %s, want %s", c[i].name, got, c[i].model);
        if (!strcmp(c[i].name, "d.sh")) {
            CHECKF(r.nnotes && r.notes[r.nnotes - 1].ignored &&
                       !strcmp(r.notes[r.nnotes - 1].mapped, "ignored: no --num-experts (a dense model)"),
                   "d.sh: the dispatcher's note: %s", r.nnotes ? r.notes[r.nnotes - 1].mapped : "none");
        }
        if (!strcmp(c[i].name, "a.sh")) { /* where the expert FFN came from, for a message naming it */
            CHECK_EQ_INT(r.src[IF_EXPERT_FFN].line, 2);
            CHECK(!strcmp(r.src[IF_EXPERT_FFN].key, "--moe-ffn-hidden-size"));
        }
        import_free(&r);
    }
    /* torchtitan: DeepSeek-V3 671B is the catalog's row without MTP; expert TP read; FSDP over the GPUs left */
    const char *toml = "[model]\nname = \"deepseek_v3\"\nflavor = \"671B\"\n[parallelism]\nexpert_parallel_degree = 8\n"
                       "expert_tensor_parallel_degree = 1\n[compile]\nenable = true\ncomponents = [\"loss\"]\n";
    ImportResult r;
    Err e;
    Status st = import_parse("ds.toml", toml, strlen(toml), IMPORT_AUTO, &r, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    if (!st) {
        CHECK(!strcmp(r.model_name, "deepseek-v3-nomtp"));
        /* compile.components without "model": the layers run eager */
        CHECKF(!strcmp(fx_import_flags(&r),
                       "--stack torchtitan --ep 8 --etp 1 --zero 3 --kernels eager --swiglu unfused --recipe bf16"),
               "%s", fx_import_flags(&r));
        import_free(&r);
    }
}

/* Errors: {text, name, format, the message's start} */
static void test_errors(void)
{
#define M                                                                                                     \
    "--num-layers 3 --hidden-size 64 --num-attention-heads 4 --seq-length 8 --vocab-size 10 --num-experts 8 " \
    "--moe-grouped-gemm --moe-token-dispatcher-type alltoall\n"
    static const struct {
        const char *text, *name, *want;
        ImportFormat fmt;
    } bad[] = {
        {"--num-layers 4\n--hidden-size 64 --num-attention-heads 3 --seq-length 8 --vocab-size 10\n", "a.sh",
         "a.sh:1: --hidden-size 64 is not a multiple of --num-attention-heads 3", IMPORT_AUTO},
        {"--num-layers 4 --hidden-size 64\n", "b.sh",
         "b.sh:1: the model needs --num-layers, --hidden-size and --num-attention-heads (--num-attention-heads "
         "missing)",
         IMPORT_AUTO},
        {"--tensor-model-parallel-size 0\n", "c.sh", "c.sh:1: --tensor-model-parallel-size: 0 is out of range",
         IMPORT_AUTO},
        {"--bf16\n--fp16\n", "d.sh", "d.sh:2: --fp16: FP16 mixed precision", IMPORT_AUTO},
        {"--tensor-model-parallel-size 4 --nproc_per_node 6\n", "e.sh",
         "e.sh:1: 6 GPUs is not a multiple of TP x PP x CP = 4", IMPORT_AUTO},
        {"--num-experts 8\n", "f.sh", "f.sh:1: --num-experts 8: the file gives no model dimensions for it",
         IMPORT_AUTO},
        /* mixture of experts: contradictory values (M: a model with 8 experts, its run options valid) */
        {M "--moe-router-topk 9\n", "m1.sh", "m1.sh:2: --moe-router-topk 9: more experts per token than --num-experts",
         IMPORT_AUTO},
        {M "--expert-model-parallel-size 3\n", "m2.sh",
         "m2.sh:2: --expert-model-parallel-size 3 does not divide --num-experts 8 (line 1)", IMPORT_AUTO},
        {M "--moe-shared-expert-intermediate-size 100\n", "m3.sh",
         "m3.sh:2: --moe-shared-expert-intermediate-size 100: not a multiple of the expert FFN width", IMPORT_AUTO},
        {M "--moe-router-enable-expert-bias\n", "m4.sh",
         "m4.sh:2: --moe-router-enable-expert-bias : an expert bias on softmax", IMPORT_AUTO},
        {M "--moe-router-score-function sqrtsoftplus\n", "m5.sh",
         "m5.sh:2: --moe-router-score-function: 'sqrtsoftplus': the planner's routers are softmax and sigmoid",
         IMPORT_AUTO},
        {M "--moe-layer-freq ([1]*1+[0]*1)*2\n", "m6.sh",
         "m6.sh:2: --moe-layer-freq: '([1]*1+[0]*1)*2' puts a dense layer after", IMPORT_AUTO},
        {M "--moe-layer-freq [0]*1+[1]*3\n", "m7.sh",
         "m7.sh:2: --moe-layer-freq [0]*1+[1]*3: the pattern's length is not --num-layers", IMPORT_AUTO},
        {M "--moe-layer-freq [0,2]\n", "m8.sh", "m8.sh:2: --moe-layer-freq: '[0,2]' is not an integer or a list",
         IMPORT_AUTO},
        /* 60000 + 60000 layers pass the 100000 a pattern may spell out: refused, not written past its buffer */
        {M "--moe-layer-freq [0]*60000+[1]*60000\n", "m15.sh",
         "m15.sh:2: --moe-layer-freq: '[0]*60000+[1]*60000' is not an integer", IMPORT_AUTO},
        {M "--moe-router-num-groups 2\n", "m9.sh",
         "m9.sh:2: --moe-router-num-groups 2: --moe-router-num-groups and --moe-router-group-topk go together",
         IMPORT_AUTO},
        {M "--recompute-granularity selective --recompute-modules moe_act gdn_norm_out\n", "m10.sh",
         "m10.sh:2: --recompute-modules: 'gdn_norm_out' is not a module the planner recomputes", IMPORT_AUTO},
        {M "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend ncclep\n", "m11.sh",
         "m11.sh:2: --moe-flex-dispatcher-backend ncclep: the flex dispatcher's deepep and hybridep", IMPORT_AUTO},
        {"--num-layers 3 --hidden-size 64 --num-attention-heads 4 --seq-length 8 --vocab-size 10 --num-experts 8\n"
         "--moe-token-dispatcher-type alltoall\n",
         "m12.sh", "m12.sh:1: --num-experts 8: without --moe-grouped-gemm Megatron runs SequentialMLP", IMPORT_AUTO},
        {"--num-layers 3 --hidden-size 64 --num-attention-heads 4 --seq-length 8 --vocab-size 10 --num-experts 1\n"
         "--moe-grouped-gemm --moe-token-dispatcher-type alltoall\n",
         "m14.sh", "m14.sh: --moe-router-topk 2 (Megatron's default): more experts per token than --num-experts",
         IMPORT_AUTO},
        {"[model]\nconverters = [\"quantize.grouped_mm.float8\"]\n", "m13.toml",
         "m13.toml:2: model.converters: 'quantize.grouped_mm.float8': only float8", IMPORT_AUTO},
        {"model: [1, 2\n", "g.yaml", "g.yaml:", IMPORT_AUTO},
        {"[parallelism]\ndata_parallel_replicate_degree = 2\n", "h.toml",
         "h.toml:2: parallelism.data_parallel_replicate_degree = 2: HSDP", IMPORT_AUTO},
        {"[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"2\"\n", "i.toml",
         "i.toml:3: activation_checkpoint.selective_ac_option = 2", IMPORT_AUTO},
        {"just words\n", "j.txt", "j.txt: no Megatron-LM argument", IMPORT_AUTO},
        {"--seq-length\n", "k.sh", "k.sh:1: --seq-length: empty value", IMPORT_AUTO},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ImportResult r;
        Err e;
        Status st = import_parse(bad[i].name, bad[i].text, strlen(bad[i].text), bad[i].fmt, &r, &e);
        CHECKF(st == ST_DATA, "case %zu: status %d", i, (int)st);
        if (st == ST_OK) import_free(&r);
        CHECKF(st != ST_DATA || !strncmp(e.msg, bad[i].want, strlen(bad[i].want)), "case %zu: '%s', want '%s...'", i,
               e.msg, bad[i].want);
    }
#undef M
}

int main(void)
{
    RUN(test_script_words);
    RUN(test_llama_defaults);
    RUN(test_bridge_and_titan);
    RUN(test_fp8_param_gather);
    RUN(test_moe);
    RUN(test_errors);
    return test_summary();
}
