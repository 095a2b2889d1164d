/* Fuzz target: the OpenVINO IR reader (graph/ir), from memory. An input is
 * a 4-byte little-endian length L, then L bytes of XML, then the weights
 * (.bin); an L past the end takes the rest as XML with no weights, and an
 * input shorter than 4 bytes is XML alone (tests/fuzz/seeds/make_seeds.sh
 * writes the seeds so). */
#include <string.h>

#include "graph/ir/ir_reader.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t xml_size = size;
    const uint8_t *xml = data, *bin = NULL;
    size_t bin_size = 0;
    if (size >= 4) {
        uint32_t len = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                       (uint32_t)data[3] << 24;
        xml = data + 4;
        xml_size = size - 4;
        if (len < xml_size) {
            bin = xml + len;
            bin_size = xml_size - len;
            xml_size = len;
        }
    }
    /* Copies, so that ASan sees a read past either buffer. */
    char *x = malloc(xml_size ? xml_size : 1);
    void *b = bin_size ? malloc(bin_size) : NULL;
    if (x == NULL || (bin_size && b == NULL))
        abort();
    memcpy(x, xml, xml_size);
    if (bin_size)
        memcpy(b, bin, bin_size);
    graph *g = NULL;
    rn_clear_error();
    rn_status st = ir_read_memory(x, xml_size, b, bin_size, "fuzz.xml", &g);
    if (st != RN_OK)
        fuzz_check_failure("ir_read_memory", st, g != NULL);
    graph_free(g);
    free(b);
    free(x);
    return 0;
}
