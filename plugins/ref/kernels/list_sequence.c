/* REF kernels of the sequence family: the Sequence* ops (sequence.c),
 * SplitToSequence and ConcatFromSequence (sequence_split.c), SequenceMap
 * (sequence_map.c), the optionals and Identity of sequences and optionals
 * (optional.c). */
#include "plugins/ref/ref.h"

extern const plugin_kernel ref_kernel_sequence_empty, ref_kernel_sequence_construct,
    ref_kernel_sequence_insert, ref_kernel_sequence_at, ref_kernel_sequence_erase,
    ref_kernel_sequence_length, ref_kernel_split_to_sequence, ref_kernel_concat_from_sequence,
    ref_kernel_sequence_map, ref_kernel_optional, ref_kernel_optional_get_element,
    ref_kernel_optional_has_element, ref_kernel_identity_values;

const plugin_kernel *const ref_kernels_sequence[] = {
    &ref_kernel_sequence_empty,       &ref_kernel_sequence_construct,
    &ref_kernel_sequence_insert,      &ref_kernel_sequence_at,
    &ref_kernel_sequence_erase,       &ref_kernel_sequence_length,
    &ref_kernel_split_to_sequence,    &ref_kernel_concat_from_sequence,
    &ref_kernel_sequence_map,         &ref_kernel_optional,
    &ref_kernel_optional_get_element, &ref_kernel_optional_has_element,
    &ref_kernel_identity_values,      NULL,
};
