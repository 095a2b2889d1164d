/* REF TfIdfVectorizer over integer tokens: counts, per row of the input
 * ([C] or [B, C]), how often each n-gram of the pool occurs, where an n-gram
 * of length n starting at i with skip s is (x[i], x[i+s+1], ...,
 * x[i+(n-1)(s+1)]) for every s in [0, max_skip_count] and n in
 * [min_gram_length, max_gram_length]; unigrams are counted once, not once
 * per skip. Pool n-gram j (in pool order across lengths) counts into output
 * column ngram_indexes[j]. Mode TF outputs the counts, IDF the weight (or 1)
 * of every n-gram seen, TFIDF weight times count.
 *
 * String tokens (pool_strings) are declined in supports(). */
#include "plugins/ref/kernels/indexing.h"

static bool supports_tfidf(const graph_node *node, const char **why)
{
    const graph_value *x = node->inputs[0];
    if (x != NULL && x->type != RN_UNDEFINED && x->type != RN_I32 && x->type != RN_I64) {
        *why = "input type other than i32/i64 (string tokens)";
        return false;
    }
    const int64_t *pool;
    if (graph_node_attr_ints(node, "pool_int64s", &pool) < 0) {
        *why = "no pool_int64s (string pools)";
        return false;
    }
    return true;
}

/* The longest n-gram length a pool may define (ngram_counts entries). */
#define MAX_GRAM 32

/* The pool, split by n-gram length: length n's n-grams start at element
 * start[n] and there are count[n] of them; first_id[n] is the global number
 * of the first one. */
typedef struct pool_view {
    const int64_t *items;
    int64_t start[MAX_GRAM + 1], count[MAX_GRAM + 1], first_id[MAX_GRAM + 1];
    int max_n;
} pool_view;

static rn_status read_pool(const graph_node *node, pool_view *p, const int64_t **indexes,
                           int *n_indexes)
{
    const int64_t *counts;
    int n_pool = graph_node_attr_ints(node, "pool_int64s", &p->items);
    int n_counts = graph_node_attr_ints(node, "ngram_counts", &counts);
    *n_indexes = graph_node_attr_ints(node, "ngram_indexes", indexes);
    if (n_counts < 0 || *n_indexes < 1 || n_counts > MAX_GRAM)
        return rn_set_error(RN_INVALID_ARG,
                            REF_IX_FMT "needs ngram_counts (at most %d) and ngram_indexes",
                            REF_IX_ARGS(node), MAX_GRAM);
    p->max_n = n_counts;
    int64_t id = 0;
    for (int n = 1; n <= n_counts; n++) {
        int64_t begin = counts[n - 1], end = n < n_counts ? counts[n] : n_pool;
        if (begin < 0 || end < begin || end > n_pool || (end - begin) % n != 0)
            return rn_set_error(RN_INVALID_ARG,
                                REF_IX_FMT "ngram_counts[%d] = %lld does not split the pool of "
                                           "%d into %d-grams",
                                REF_IX_ARGS(node), n - 1, (long long)begin, n_pool, n);
        p->start[n] = begin;
        p->count[n] = (end - begin) / n;
        p->first_id[n] = id;
        id += p->count[n];
    }
    if (id > *n_indexes)
        return rn_set_error(RN_INVALID_ARG, REF_IX_FMT "%lld pool n-grams but %d ngram_indexes",
                            REF_IX_ARGS(node), (long long)id, *n_indexes);
    return RN_OK;
}

/* Global number of the pool n-gram of length n equal to the tokens at
 * row[i], row[i+step], ..., or -1. A repeated pool entry resolves to its
 * last occurrence, as the ONNX reference's trie does. */
static int64_t find_gram(const pool_view *p, const graph_tensor *x, size_t row, int64_t i,
                         int64_t step, int n)
{
    if (n > p->max_n)
        return -1;
    for (int64_t g = p->count[n] - 1; g >= 0; g--) {
        const int64_t *gram = p->items + p->start[n] + g * n;
        int k = 0;
        while (k < n && ref_mv_int_at(x, row + (size_t)(i + k * step)) == gram[k])
            k++;
        if (k == n)
            return p->first_id[n] + g;
    }
    return -1;
}

static rn_status run_tfidf(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    pool_view p;
    const int64_t *indexes;
    int n_indexes;
    REF_IX_TRY(read_pool(node, &p, &indexes, &n_indexes));
    int64_t min_n = graph_node_attr_int(node, "min_gram_length", 1);
    int64_t max_n = graph_node_attr_int(node, "max_gram_length", 1);
    int64_t max_skip = graph_node_attr_int(node, "max_skip_count", 0);
    const char *mode = graph_node_attr_string(node, "mode", "TF");
    int weighting = strcmp(mode, "TF") == 0 ? 0 : strcmp(mode, "IDF") == 0 ? 1 : 2;
    if (strcmp(mode, "TFIDF") != 0 && weighting == 2)
        return rn_set_error(RN_INVALID_ARG, REF_IX_FMT "mode '%s' is not TF, IDF or TFIDF",
                            REF_IX_ARGS(node), mode);
    if (min_n < 1 || max_n < min_n || max_skip < 0 || max_skip > INT32_MAX)
        return rn_set_error(
            RN_INVALID_ARG, REF_IX_FMT "bad gram lengths [%lld, %lld] or skip count %lld",
            REF_IX_ARGS(node), (long long)min_n, (long long)max_n, (long long)max_skip);
    if (x->rank > 2)
        return rn_set_error(RN_SHAPE_MISMATCH, REF_IX_FMT "input must be [C] or [B, C], rank %d",
                            REF_IX_ARGS(node), x->rank);
    int64_t rows = x->rank == 2 ? x->dims[0] : 1;
    int64_t cols = x->rank == 2 ? x->dims[1] : x->rank == 1 ? x->dims[0] : 1;
    graph_tensor *y;
    REF_IX_TRY(ref_mv_output(args, 0, &y));
    int64_t width = 0;
    for (int j = 0; j < n_indexes; j++) {
        if (indexes[j] < 0 || indexes[j] > INT32_MAX)
            return rn_set_error(RN_INVALID_ARG, REF_IX_FMT "ngram_indexes[%d] is %lld",
                                REF_IX_ARGS(node), j, (long long)indexes[j]);
        width = indexes[j] + 1 > width ? indexes[j] + 1 : width;
    }
    if (y->type != RN_F32 || (int64_t)graph_tensor_count(y) != rows * width)
        return rn_set_error(RN_INTERNAL, REF_IX_FMT "output is not f32 [%lld, %lld]",
                            REF_IX_ARGS(node), (long long)rows, (long long)width);
    const float *weights = NULL;
    int n_weights = graph_node_attr_floats(node, "weights", &weights);
    if (n_weights > 0 && n_weights < width)
        return rn_set_error(RN_INVALID_ARG, REF_IX_FMT "%d weights for %lld outputs",
                            REF_IX_ARGS(node), n_weights, (long long)width);
    float *out = y->data;
    memset(out, 0, sizeof *out * (size_t)(rows * width));
    if (max_n > p.max_n)
        max_n = p.max_n;
    for (int64_t r = 0; r < rows; r++) {
        float *counts = out + r * width;
        size_t row = (size_t)(r * cols);
        for (int64_t skip = 0; skip <= max_skip; skip++) {
            int64_t step = skip + 1;
            /* Unigrams have no gaps: count them with the first skip only. */
            int64_t from_n = skip > 0 && min_n == 1 ? 2 : min_n;
            for (int64_t n = from_n; n <= max_n; n++)
                for (int64_t i = 0; i + (n - 1) * step < cols; i++) {
                    int64_t id = find_gram(&p, x, row, i, step, (int)n);
                    if (id >= 0)
                        counts[indexes[id]] += 1;
                }
            if (from_n > max_n || max_n == 1)
                break;
        }
        for (int64_t c = 0; c < width; c++) {
            float w = n_weights > 0 ? weights[c] : 1.0f;
            if (weighting == 1)
                counts[c] = counts[c] > 0 ? w : 0;
            else if (weighting == 2)
                counts[c] *= w;
        }
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_tfidf_vectorizer = {
    .domain = "",
    .op_type = "TfIdfVectorizer",
    .impl_type = "ref",
    .supports = supports_tfidf,
    .run = run_tfidf,
};
