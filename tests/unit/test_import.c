/* tests/unit/test_import.c — the readers of users' own files, through import_parse: a launch script's
 * words (quotes, line continuations, comments, NAME=value then $NAME / ${NAME}, --flag=value, a quoted
 * "--flag value" array element), Megatron-LM's GPT defaults where the file is silent, the flags each
 * setting becomes, and errors naming the file, line and setting. The expected flags and dimensions are
 * read off the texts below by hand. */
#include <stdio.h>
#include <string.h>

#include "import/import.h"
#include "test.h"

/* The flags as one string ("--stack megatron-lm --tp 2 ..."). */
static const char *joined(const ImportResult *r)
{
    static char buf[2048];
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < r->argc && n + 1 < sizeof buf; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? " " : "", r->argv[i]);
    return buf;
}

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
    CHECKF(!strcmp(joined(&r), "--stack megatron-lm --tp 2 --seq 128 --sp --gpus 4 --recipe megatron-bf16"), "%s",
           joined(&r));
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
    CHECKF(!strcmp(joined(&r), "--stack megatron-lm --dist-opt --overlap-dp on --main-grad bf16 --gbs 64 "
                               "--recompute full --recipe te-fp8-current"),
           "%s", joined(&r));
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
        CHECKF(!strcmp(joined(&r), "--stack megatron-core --seq 32 --grad-acc-fusion off --tp 2 --mbs 2 --gbs 16 "
                                   "--main-grad fp32 --recipe megatron-bf16"),
               "%s", joined(&r));
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
    for (size_t i = 0; i < sizeof mp / sizeof *mp; i++) {
        char text[160];
        snprintf(text, sizeof text, "train:\n  micro_batch_size: 1\nmixed_precision: %s\n", mp[i].name);
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
        CHECKF(!strcmp(joined(&r), "--stack torchtitan --tp 2 --mbs 3 --seq 4096 --dp 4 --zero 3 --recompute op "
                                   "--recipe torchao-fp8-rowwise"),
               "%s", joined(&r));
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
        {"g.sh", "--fp8-format hybrid --fp8-recipe blockwise --fp8-param-gather", "deepseek-v3",
         "ignored: blockwise scaling has no FP8-parameter recipe", 1},
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

/* Errors: {text, name, format, the message's start} */
static void test_errors(void)
{
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
        {"--num-experts 8\n", "f.sh", "f.sh:1: --num-experts: mixture-of-experts arguments are not read yet",
         IMPORT_AUTO},
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
}

int main(void)
{
    RUN(test_script_words);
    RUN(test_llama_defaults);
    RUN(test_bridge_and_titan);
    RUN(test_fp8_param_gather);
    RUN(test_errors);
    return test_summary();
}
