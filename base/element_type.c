/* The element-type table: sizes and names, generated from RN_ELEMENT_TYPE_MAP. */
#include "runnel/tensor.h"

size_t rn_element_type_size(rn_element_type type)
{
    switch (type) {
#define RN_ELEMENT_SIZE_(name, onnx, text, size)                                                   \
    case RN_##name:                                                                                \
        return size;
        RN_ELEMENT_TYPE_MAP(RN_ELEMENT_SIZE_)
#undef RN_ELEMENT_SIZE_
    }
    return 0;
}

const char *rn_element_type_name(rn_element_type type)
{
    switch (type) {
#define RN_ELEMENT_NAME_(name, onnx, text, size)                                                   \
    case RN_##name:                                                                                \
        return text;
        RN_ELEMENT_TYPE_MAP(RN_ELEMENT_NAME_)
#undef RN_ELEMENT_NAME_
    }
    return "unknown";
}

int rn_element_type_is_valid(rn_element_type type)
{
    switch (type) {
#define RN_ELEMENT_VALID_(name, onnx, text, size)                                                  \
    case RN_##name:                                                                                \
        return RN_##name != RN_UNDEFINED;
        RN_ELEMENT_TYPE_MAP(RN_ELEMENT_VALID_)
#undef RN_ELEMENT_VALID_
    }
    return 0;
}
