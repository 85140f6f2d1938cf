/* tests/unit/test_moe_params.c — parameter counts of the mixture-of-experts and
 * latent-attention models, worked by hand from their config.json values, against the
 * published totals and activated counts; the catalog's checks of the MoE/MLA
 * columns (every bad cell names file, row and column); and a sigmoid router's bias,
 * which is no parameter, planned as the FP32 buffer router_bias. */
#include <stdlib.h>

#include "catalog/catalog.h"
#include "planner/plan.h"
#include "support/fixtures.h"
#include "support/oracle_fixtures.h"
#include "test.h"

/* A published figure rounded to `unit` (1e9: "37B", 1e8: "12.9B"); the computed count must lie within one unit of
 * it — publishers round (Mixtral: 12.88 -> 12.9) or truncate (Qwen3: 3.353 -> 3.3, DeepSeek: 37.55 -> 37). */
static void check_published(const char *name, uint64_t computed, double published, double unit)
{
    double d = (double)computed - published;
    CHECKF(d > -unit && d < unit, "%s: %.4g is not within %g of the published %.4g", name, (double)computed, unit,
           published);
}

static void test_deepseek_v3(void)
{
    Catalog *c = fx_catalog();
    const ModelSpec *m = catalog_model(c, "deepseek-v3");
    CHECK(m != NULL);
    if (!m) return free(c);
    ModelParams mp;
    CHECK(model_params(m, &mp) == 0);
    /* MLA per layer: q_down 7168 x 1536 = 11,010,048; q_up 1536 x 128 x 192 = 37,748,736;
     * kv_down 7168 x (512 + 64) = 4,128,768; kv_up 512 x 128 x (128 + 128) = 16,777,216;
     * out 128 x 128 x 7168 = 117,440,512; sum 187,105,280, + latent norms 1536 + 512 = 187,107,328.
     * Two RMSNorms 2 x 7168 = 14,336. Dense FFN 3 x 7168 x 18432 = 396,361,728.
     * One expert 3 x 7168 x 2048 = 44,040,192; 256 routed = 11,274,289,152; 1 shared = 44,040,192;
     * router 256 x 7168 = 1,835,008 (its 256 bias values are a buffer, not a parameter: plan_params.c).
     * Dense layer 187,107,328 + 14,336 + 396,361,728 = 583,483,392, x 3 = 1,750,450,176.
     * MoE layer 187,107,328 + 14,336 + 11,274,289,152 + 44,040,192 + 1,835,008 = 11,507,286,016, x 58
     *   = 667,422,588,928.
     * Embedding and head 2 x 129280 x 7168 = 1,853,358,080; final norm 7168.
     * Total 1,750,450,176 + 667,422,588,928 + 1,853,358,080 + 7168 = 671,026,404,352 ("671B"; the checkpoint's
     * main model stores the 58 x 256 = 14,848 bias values besides: 671,026,419,200). */
    CHECK_EQ_U64(mp.total, 671026404352ull);
    check_published("deepseek-v3 total", mp.total, 671e9, 1e9);
    /* activated: each MoE layer uses 8 of 256 routed experts: less 248 x 44,040,192 = 10,921,967,616 per layer,
     * x 58 = 633,474,121,728; 671,026,404,352 - 633,474,121,728 = 37,552,282,624 ("37B activated"); without the
     * embedding table (926,679,040) 36,625,603,584 (README_WEIGHTS.md's "36.6B including the output head"). */
    CHECK_EQ_U64(mp.active, 37552282624ull);
    check_published("deepseek-v3 activated", mp.active, 37e9, 1e9);
    CHECK_EQ_U64(mp.embedding, 926679040ull);
    check_published("deepseek-v3 activated without the embedding", mp.active - mp.embedding, 36.6e9, 1e8);
    /* MTP depth 1: eh_proj 2 x 7168 x 7168 = 102,760,448, enorm + hnorm + final norm 3 x 7168 = 21,504, one MoE
     * layer 11,507,286,016: 11,610,067,968; with the shared embedding and head stored again (1,853,358,080) and
     * the 59 layers' bias buffers (59 x 256 = 15,104) the Hugging Face checkpoint holds 671,026,404,352 +
     * 11,610,067,968 + 1,853,358,080 + 15,104 = 684,489,845,504 ("685B"). */
    CHECK_EQ_U64(mp.mtp, 11610067968ull);
    CHECK_EQ_U64(mp.total + mp.mtp + 2 * mp.embedding + 59 * 256, 684489845504ull);
    check_published("deepseek-v3 on Hugging Face", mp.total + mp.mtp + 2 * mp.embedding, 685e9, 1e9);
    free(c);
}

static void test_mixtral_and_qwen3(void)
{
    Catalog *c = fx_catalog();
    const struct {
        const char *name;
        uint64_t total, active;
        double pub_total, pub_active, unit;
    } rows[] = {
        /* Mixtral 8x7B: attention 4096 x (4096 + 2 x 1024) + 4096 x 4096 = 41,943,040; expert 3 x 4096 x 14336
         * = 176,160,768, x 8 = 1,409,286,144; router 8 x 4096 = 32,768; norms 8,192: 1,451,270,144 per layer,
         * x 32 = 46,440,644,608; embedding + head 2 x 32000 x 4096 = 262,144,000; final norm 4096:
         * 46,702,792,704 ("46.7B"). Active: 6 experts fewer per layer, 6 x 176,160,768 x 32 = 33,822,867,456:
         * 12,879,925,248 ("12.9B"). */
        {"mixtral-8x7b", 46702792704ull, 12879925248ull, 46.7e9, 12.9e9, 1e8},
        /* Mixtral 8x22B: attention 6144 x (6144 + 2048) + 6144 x 6144 = 88,080,384; expert 3 x 6144 x 16384
         * = 301,989,888, x 8 = 2,415,919,104; router 49,152; norms 12,288: 2,504,060,928 x 56 = 140,227,411,968;
         * embedding + head 2 x 32768 x 6144 = 402,653,184; final norm 6144: 140,630,071,296 ("141B"). Active:
         * less 6 x 301,989,888 x 56 = 101,468,602,368: 39,161,468,928 ("39B"). */
        {"mixtral-8x22b", 140630071296ull, 39161468928ull, 141e9, 39e9, 1e9},
        /* Qwen3-30B-A3B: attention 2048 x (4096 + 2 x 512) + 2048 x 4096 = 18,874,368, q/k norms 256; expert
         * 3 x 2048 x 768 = 4,718,592, x 128 = 603,979,776; router 128 x 2048 = 262,144; norms 4,096:
         * 623,120,640 x 48 = 29,909,790,720; embedding + head 2 x 151936 x 2048 = 622,329,856; final norm 2048:
         * 30,532,122,624 ("30.5B"). Active: less 120 x 4,718,592 x 48 = 27,179,089,920: 3,353,032,704 ("3.3B"). */
        {"qwen3-30b-a3b", 30532122624ull, 3353032704ull, 30.5e9, 3.3e9, 1e8},
        /* Qwen3-235B-A22B: attention 4096 x (8192 + 1024) + 8192 x 4096 = 71,303,168, q/k norms 256; expert
         * 3 x 4096 x 1536 = 18,874,368, x 128 = 2,415,919,104; router 524,288; norms 8,192: 2,487,755,008 x 94 =
         * 233,848,970,752; embedding + head 2 x 151936 x 4096 = 1,244,659,712; final norm 4096: 235,093,634,560
         * ("235B"). Active: less 120 x 18,874,368 x 94 = 212,902,871,040: 22,190,763,520 ("22B"). */
        {"qwen3-235b-a22b", 235093634560ull, 22190763520ull, 235e9, 22e9, 1e9},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        const ModelSpec *m = catalog_model(c, rows[i].name);
        CHECKF(m != NULL, "%s", rows[i].name);
        if (!m) continue;
        ModelParams mp;
        CHECK(model_params(m, &mp) == 0);
        CHECKF(mp.total == rows[i].total, "%s total %llu", rows[i].name, (unsigned long long)mp.total);
        CHECKF(mp.active == rows[i].active, "%s active %llu", rows[i].name, (unsigned long long)mp.active);
        CHECK_EQ_U64(mp.mtp, 0);
        check_published(rows[i].name, mp.total, rows[i].pub_total, rows[i].unit);
        check_published(rows[i].name, mp.active, rows[i].pub_active, rows[i].unit);
    }
    /* Qwen3-30B-A3B's model card also gives 29.9B without the embedding and the head: 30,532,122,624 -
     * 622,329,856 = 29,909,792,768 */
    ModelParams q;
    CHECK(model_params(catalog_model(c, "qwen3-30b-a3b"), &q) == 0);
    check_published("qwen3-30b-a3b non-embedding", q.total - 2 * q.embedding, 29.9e9, 1e8);
    /* a dense model: active = total, nothing in MTP */
    ModelParams d;
    CHECK(model_params(catalog_model(c, "llama3-8b"), &d) == 0);
    CHECK_EQ_U64(d.total, 8030261248ull);
    CHECK_EQ_U64(d.active, d.total);
    free(c);
}

/* ---- catalog checks of the MoE / MLA columns ---------------------------------------------------------------- */

static const char *hdr = "name,layers,hidden,ffn_hidden,heads,kv_heads,head_dim,vocab,seq_len,norm,mlp,position,"
                         "tied_embeddings,linear_bias,source,qk_norm,experts,experts_per_token,shared_experts,"
                         "expert_ffn_hidden,dense_layers,router,router_groups,router_group_topk,q_lora_rank,"
                         "kv_lora_rank,qk_nope_head_dim,qk_rope_head_dim,v_head_dim,mtp_layers\n";
/* base columns of a small SwiGLU model with 4 layers, 4 heads of 8 */
#define BASE "m,4,32,64,4,4,8,100,16,rmsnorm,swiglu,rope,no,no,src,"

static void expect(const char *ext, Status want, const char *part)
{
    char text[2048];
    snprintf(text, sizeof text, "%s" BASE "%s\n", hdr, ext);
    Catalog *c = calloc(1, sizeof *c);
    Err e = {0};
    Status st = catalog_parse_models(c, text, strlen(text), "m.csv", &e);
    CHECKF(st == want, "status %d for %s: %s", st, ext, e.msg);
    if (want != ST_OK) CHECK_CONTAINS(e.msg, part);
    free(c);
}

static void test_catalog_checks(void)
{
    /* qk_norm,experts,topk,shared,expert_ffn,dense,router,groups,group_topk,q_lora,kv_lora,nope,rope,v,mtp */
    expect(",,,,,,,,,,,,,,", ST_OK, "");                    /* dense: every cell empty */
    expect("no,0,0,0,0,0,none,0,0,0,0,0,0,0,0", ST_OK, ""); /* or 0 */
    expect("yes,8,2,1,16,1,softmax,,,,,,,,1", ST_OK, "");
    expect("no,8,2,0,16,0,sigmoid,4,2,16,8,4,4,8,0", ST_OK, "");
    expect(",,2,,,,,,,,,,,,", ST_DATA, "m.csv: row 2, column experts_per_token: '2' is given, but experts is 0");
    expect(",8,0,,16,,softmax,,,,,,,,", ST_DATA, "column experts_per_token: '0' must be in [1, experts = 8]");
    expect(",8,9,,16,,softmax,,,,,,,,", ST_DATA, "column experts_per_token: '9'");
    expect(",8,2,,,,softmax,,,,,,,,", ST_DATA, "column expert_ffn_hidden: empty or 0");
    expect(",8,2,,16,,,,,,,,,,", ST_DATA, "column router: empty or none");
    expect(",8,2,,16,,argmax,,,,,,,,", ST_DATA, "column router: 'argmax' is not none, softmax or sigmoid");
    expect(",8,2,,16,4,softmax,,,,,,,,", ST_DATA, "column dense_layers: '4' leaves no MoE layer of 4");
    expect(",8,2,,16,,softmax,3,1,,,,,,", ST_DATA, "column router_group_topk"); /* 3 groups do not divide 8 */
    expect(",8,4,,16,,softmax,4,1,,,,,,", ST_DATA, "column router_group_topk"); /* 1 group of 2 holds 2 < 4 */
    expect(",8,2,,16,,softmax,,2,,,,,,", ST_DATA, "column router_group_topk: '2' is given, but router_groups is 0");
    expect(",,,,,,,,,,8,4,3,8,", ST_DATA, "column qk_rope_head_dim: '3'"); /* 4 + 3 != head_dim 8 */
    expect(",,,,,,,,,8,,,,,", ST_DATA, "column q_lora_rank: '8' is given, but kv_lora_rank is 0");
    expect(",,,,,,,,,,,,,,17", ST_DATA, "column mtp_layers: '17' is out of range [0, 16]");
    expect(",-1,,,,,,,,,,,,,", ST_DATA, "column experts");
    expect("maybe,,,,,,,,,,,,,,", ST_DATA, "column qk_norm: 'maybe' is not yes or no");
    /* latent attention needs kv_heads = heads; MoE and MLA rows carry no biases */
    char text[2048];
    snprintf(text, sizeof text, "%sm,4,32,64,4,2,8,100,16,rmsnorm,swiglu,rope,no,no,src,,,,,,,,,,,8,4,4,8,\n", hdr);
    Catalog *c = calloc(1, sizeof *c);
    Err e = {0};
    CHECK(catalog_parse_models(c, text, strlen(text), "m.csv", &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "column kv_heads: '2': latent attention has one key/value head per query head");
    snprintf(text, sizeof text, "%sm,4,32,64,4,4,8,100,16,rmsnorm,swiglu,rope,no,yes,src,,8,2,,16,,softmax,,,,,,,,\n",
             hdr);
    CHECK(catalog_parse_models(c, text, strlen(text), "m.csv", &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "column linear_bias");
    free(c);
    /* the experts' details, optional last columns expert_bias and glu_clamp (GPT-OSS: yes, 7): on a MoE model only,
     * the clamp on a gated MLP only */
    static const struct {
        const char *mlp, *ext, *tail;
        Status want;
        const char *part;
    } d[] = {
        {"swiglu", ",8,2,,16,,softmax,,,,,,,,", "yes,7", ST_OK, ""},
        {"swiglu", ",8,2,,16,,softmax,,,,,,,,", ",", ST_OK, ""},
        {"swiglu", ",,,,,,,,,,,,,,", "yes,", ST_DATA,
         "m.csv: row 2, column expert_bias: 'yes' is given, but experts is 0"},
        {"swiglu", ",,,,,,,,,,,,,,", ",7", ST_DATA, "column glu_clamp: '7' is given, but experts is 0"},
        {"gelu", ",8,2,,16,,softmax,,,,,,,,", ",7", ST_DATA, "column glu_clamp: '7': a clamp limit needs a gated MLP"},
        {"swiglu", ",8,2,,16,,softmax,,,,,,,,", ",-1", ST_DATA, "column glu_clamp"},
        {"swiglu", ",8,2,,16,,softmax,,,,,,,,", "maybe,", ST_DATA, "column expert_bias: 'maybe' is not yes or no"},
    };
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        char t[2048];
        snprintf(t, sizeof t, "%.*s,expert_bias,glu_clamp\nm,4,32,64,4,4,8,100,16,rmsnorm,%s,rope,no,no,src,%s,%s\n",
                 (int)strlen(hdr) - 1, hdr, d[i].mlp, d[i].ext, d[i].tail);
        Catalog *cd = calloc(1, sizeof *cd);
        Status st = catalog_parse_models(cd, t, strlen(t), "m.csv", &e);
        CHECKF(st == d[i].want, "row %zu: status %d: %s", i, st, e.msg);
        if (d[i].want != ST_OK) CHECK_CONTAINS(e.msg, d[i].part);
        if (st == ST_OK && i == 0) CHECK(cd->models[0].expert_bias == 1 && cd->models[0].glu_clamp == 7.0);
        free(cd);
    }
    /* a row written before the optional columns joined the header may leave them out (30 or 31 of 32 fields: read
     * as empty); one that stops earlier is ragged */
    static const struct {
        const char *tail;
        Status want;
    } s[] = {{"", ST_OK}, {",yes", ST_OK}, {",yes,7", ST_OK}};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        char t[2048];
        snprintf(t, sizeof t, "%.*s,expert_bias,glu_clamp\n" BASE ",8,2,,16,,softmax,,,,,,,,%s\n", (int)strlen(hdr) - 1,
                 hdr, s[i].tail);
        Catalog *cd = calloc(1, sizeof *cd);
        CHECKF(catalog_parse_models(cd, t, strlen(t), "m.csv", &e) == s[i].want, "short row %zu: %s", i, e.msg);
        CHECK(cd->models[0].expert_bias == (i > 0) && cd->models[0].glu_clamp == (i > 1 ? 7.0 : 0.0));
        free(cd);
    }
    char t[2048];
    snprintf(t, sizeof t, "%.*s,expert_bias,glu_clamp\n" BASE ",8,2,,16,,softmax,,,,,,,\n", (int)strlen(hdr) - 1, hdr);
    Catalog *cd = calloc(1, sizeof *cd);
    CHECK(catalog_parse_models(cd, t, strlen(t), "m.csv", &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "m.csv: row 2: 29 fields, but the header has 32");
    free(cd);
}

/* A small MoE model counted by hand: 4 layers, hidden 32, 4 heads of 8 (standard attention, kv 4), vocab 100,
 * RMSNorm, SwiGLU, untied; 8 experts of 16, top 2, 1 shared, first layer dense (FFN 64), sigmoid router; MTP 1. */
static void test_small_moe(void)
{
    ModelSpec m = {.layers = 4,
                   .hidden = 32,
                   .ffn_hidden = 64,
                   .heads = 4,
                   .kv_heads = 4,
                   .head_dim = 8,
                   .vocab = 100,
                   .seq_len = 16,
                   .norm = NORM_RMSNORM,
                   .mlp = MLP_SWIGLU,
                   .pos = POS_ROPE,
                   .experts = 8,
                   .experts_per_token = 2,
                   .shared_experts = 1,
                   .expert_ffn = 16,
                   .dense_layers = 1,
                   .router = ROUTER_SIGMOID,
                   .mtp_layers = 1};
    ModelParams mp;
    CHECK(model_params(&m, &mp) == 0);
    /* attention 32 x (32 + 64) + 32 x 32 = 4096; norms 64; dense FFN 3 x 64 x 32 = 6144: dense layer 10,304.
     * expert 3 x 16 x 32 = 1536, 8 routed = 12,288, shared 1536, router 8 x 32 = 256 (the sigmoid router's 8
     * bias values are a buffer, in no count): MoE layer 4096 + 64 + 12,288 + 1536 + 256 = 18,240, x 3 = 54,720.
     * Embedding + head 2 x 100 x 32 = 6400, final norm 32. Total 10,304 + 54,720 + 6400 + 32 = 71,456; active:
     * 6 x 1536 x 3 = 27,648 fewer = 43,808. MTP: 2 x 32 x 32 = 2048 + 3 x 32 = 96 + 18,240 = 20,384. */
    CHECK_EQ_U64(mp.total, 71456);
    CHECK_EQ_U64(mp.active, 43808);
    CHECK_EQ_U64(mp.mtp, 20384);
    CHECK_EQ_U64(mp.embedding, 3200);
    /* the same with MLA: q_lora 16, kv_lora 8, nope 4, rope 4, v 8: q_down 32 x 16 = 512, q_up 16 x 4 x 8 = 512,
     * kv_down 32 x 12 = 384, kv_up 8 x 4 x 12 = 384, out 4 x 8 x 32 = 1024: 2816 + latent norms 24 = 2840,
     * 1256 less than 4096 per layer: total 71,456 - 4 x 1256 = 66,432 */
    m.q_lora_rank = 16, m.kv_lora_rank = 8, m.qk_nope_head_dim = 4, m.qk_rope_head_dim = 4, m.v_head_dim = 8;
    CHECK(model_params(&m, &mp) == 0);
    CHECK_EQ_U64(mp.total, 66432);
    m.router = ROUTER_SOFTMAX; /* the router's kind changes no parameter count */
    CHECK(model_params(&m, &mp) == 0);
    CHECK_EQ_U64(mp.total, 66432);
}

/* A sigmoid router's per-expert bias (DeepSeek-V3's auxiliary-loss-free balancing) is a buffer, as Megatron-Core
 * keeps expert_bias: FP32 on every rank, no master, gradient or Adam state, in no gradient collective. The plan of
 * support/oracle_fixtures.h's ox_moe(512) (test_moe_plan.c's model: 2 layers, the first dense, hidden 256, 8
 * experts of FFN 128, top 2, 1 shared) with a sigmoid router, dp 4 x ep 4, distributed optimizer: parameters as the softmax model's (1,015,808
 * + 196,608 + 515,328; the router 8 x 256 = 2,048 without bias values); router_bias 1 MoE layer x 8 experts x
 * 4 B = 32 B, whole (not over dp), the total 32 B above the softmax plan's; master_other, grad_other and the DP
 * gradient reduce-scatter as the softmax plan's. At tp 2 x dp 2 with SP the TP norm-gradient all-reduce takes
 * the norms and the router weight, FP32: dense layer 2 x 256 = 512, MoE layer 512 + 2,048 = 2,560, final norm
 * 256: 3,328 values, 13,312 B, the softmax plan's (with the bias it would be 3,336 values, 13,344 B). */
static void test_sigmoid_bias_buffer(void)
{
    ModelSpec soft = ox_moe(512), sig = soft;
    sig.router = ROUTER_SIGMOID;
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", (1u << STATE_MASTER) | (1u << STATE_M) | (1u << STATE_V));
    PlanInput in = fx_input(&soft, &g, &r);
    in.dp = 4, in.ep = 4, in.sharding = SHARD_DIST_OPT;
    Plan a = ox_build(&in);
    in.model = &sig;
    Plan b = ox_build(&in);
    CHECK_EQ_U64(b.params_gpu, 1015808 + 196608 + 515328);
    CHECK_EQ_U64(b.mem[MT_ROUTER_BIAS].bytes, 32);
    CHECK_EQ_U64(b.mem[MT_ROUTER_BIAS].elements, 8);
    CHECK(b.mem[MT_ROUTER_BIAS].dtype == DT_FP32 && b.mem[MT_ROUTER_BIAS].shards <= 1);
    CHECK(plan_term_applies(&b, MT_ROUTER_BIAS) && !plan_term_applies(&a, MT_ROUTER_BIAS));
    CHECK_EQ_U64(a.mem[MT_ROUTER_BIAS].bytes, 0);
    CHECK_EQ_U64(b.total_bytes, a.total_bytes + 32);
    CHECK_EQ_U64(b.cat_bytes[MC_STATE], a.cat_bytes[MC_STATE] + 32);
    CHECK_EQ_U64(b.mem[MT_MASTER_OTHER].bytes, a.mem[MT_MASTER_OTHER].bytes);
    CHECK_EQ_U64(b.mem[MT_GRAD_OTHER].bytes, a.mem[MT_GRAD_OTHER].bytes);
    CHECK_EQ_U64(b.mem[MT_OPTIM_V_OTHER].bytes, a.mem[MT_OPTIM_V_OTHER].bytes);
    CHECK_EQ_U64(b.coll[CO_DP_GRAD_RS].payload_bytes, a.coll[CO_DP_GRAD_RS].payload_bytes);
    in.dp = 2, in.tp = 2, in.sp = 1, in.ep = 1, in.sharding = SHARD_NONE;
    b = ox_build(&in);
    in.model = &soft;
    a = ox_build(&in);
    CHECK_EQ_U64(b.coll[CO_TP_NORM_GRAD_AR].payload_bytes, 13312);
    CHECK_EQ_U64(a.coll[CO_TP_NORM_GRAD_AR].payload_bytes, 13312);
    CHECK_EQ_U64(b.coll[CO_DP_GRAD_AR].payload_bytes, a.coll[CO_DP_GRAD_AR].payload_bytes);
    CHECK_EQ_U64(b.mem[MT_ROUTER_BIAS].bytes, 32); /* whole on every TP rank */
}

/* Linear biases of a model the MoE path plans (any with experts, latent attention or MTP depths): the tiny GPT of
 * support/oracle_fixtures.h (4 layers, hidden 8, FFN 16 GELU, 2 heads and 2 KV heads of 4, RMSNorm, learned
 * positions, tied, vocabulary 16, seq 4) with one MTP depth, BF16 (2 B a weight, FP32 gradients reduced in FP32).
 * A layer's biases: QKV (2 + 2 x 2) x 4 = 24, out-projection 8, FC1 16, FC2 8 = 56, on its 2 x 8 norm weights.
 * tp 1: 4 layers x (16 + 56) = 288, the MTP depth 3 x 8 norms + its layer 72 = 96 (eh_proj 8 x 16 is a GEMM weight,
 * without bias), embedding 16 x 8 = 128, positions 4 x 8 = 32, final norm 8: 552 "other" values, 1,104 B; without
 * biases 552 - 5 x 56 = 272 (544 B). The plan without the MTP depth (the dense path) holds 552 - 96 = 456.
 * dp 2: the gradient all-reduce carries the biases' FP32 gradients too, 5 x 56 x 4 = 1,120 B more.
 * tp 2: the column-parallel biases are sharded (QKV 12, FC1 8), the row-parallel ones whole (8 + 8): 36 a layer,
 * 5 x 36 = 180 values more than without biases. */
static void test_mtp_linear_biases(void)
{
    static const struct {
        uint32_t tp, dp, mtp, bias;
        uint64_t other; /* MT_WEIGHT_OTHER values; 0: only the difference below is worked by hand */
    } rows[] = {
        {1, 1, 1, 1, 552}, {1, 1, 1, 0, 272}, {1, 1, 0, 1, 456}, {1, 2, 1, 1, 552}, {2, 1, 1, 1, 0}, {2, 1, 1, 0, 0},
    };
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    uint64_t other[6] = {0}, grad_ar[6] = {0};
    for (int i = 0; i < 6; i++) {
        ModelSpec m = ox_tiny(16, 4);
        m.mtp_layers = rows[i].mtp, m.linear_bias = (int)rows[i].bias;
        PlanInput in = fx_input(&m, &g, &r);
        in.tp = rows[i].tp, in.sp = rows[i].tp > 1, in.dp = rows[i].dp, in.gbs = rows[i].dp;
        Plan p = ox_build(&in);
        other[i] = p.mem[MT_WEIGHT_OTHER].elements, grad_ar[i] = p.coll[CO_DP_GRAD_AR].payload_bytes;
        if (rows[i].other) {
            CHECKF(other[i] == rows[i].other, "tp %u dp %u mtp %u bias %u: %llu other values, expected %llu",
                   rows[i].tp, rows[i].dp, rows[i].mtp, rows[i].bias, (unsigned long long)other[i],
                   (unsigned long long)rows[i].other);
            CHECK_EQ_U64(p.mem[MT_WEIGHT_OTHER].bytes, 2 * rows[i].other);
        }
    }
    ModelSpec m = ox_tiny(16, 4);
    m.mtp_layers = 1, m.linear_bias = 0;
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 2, in.gbs = 2;
    Plan p = ox_build(&in);
    CHECK_EQ_U64(grad_ar[3], p.coll[CO_DP_GRAD_AR].payload_bytes + 1120);
    CHECK_EQ_U64(other[4], other[5] + 180);
}

int main(void)
{
    RUN(test_deepseek_v3);
    RUN(test_mixtral_and_qwen3);
    RUN(test_catalog_checks);
    RUN(test_small_moe);
    RUN(test_sigmoid_bias_buffer);
    RUN(test_mtp_linear_biases);
    return test_summary();
}
