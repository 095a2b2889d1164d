/* REF kernels of the string family: StringNormalizer (string_normalizer.c),
 * StringConcat and StringSplit (string_ops.c), RegexFullMatch
 * (regex_full_match.c). */
#include "plugins/ref/ref.h"

extern const plugin_kernel ref_kernel_string_normalizer, ref_kernel_string_concat,
    ref_kernel_string_split, ref_kernel_regex_full_match;

const plugin_kernel *const ref_kernels_string[] = {
    &ref_kernel_string_normalizer,
    &ref_kernel_string_concat,
    &ref_kernel_string_split,
    &ref_kernel_regex_full_match,
    NULL,
};
