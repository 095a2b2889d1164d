/* The XML element tree of an IR file, built from Expat's callbacks. Expat
 * does the parsing (well-formedness, entities, encodings); this file only
 * keeps what it reports as a tree the reader can walk. */
#include <expat.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ir/ir_internal.h"

/* Expat's user data: the element being filled, the stack of open ones, and
 * whether memory ran out inside a callback (then the parse is stopped). */
typedef struct tree_builder {
    XML_Parser parser;
    ir_xml *root;
    ir_xml **stack;
    int depth, cap;
    bool out_of_memory;
} tree_builder;

void ir_xml_free(ir_xml *x)
{
    if (x == NULL)
        return;
    for (int i = 0; i < x->n_children; i++)
        ir_xml_free(x->children[i]);
    for (int i = 0; i < 2 * x->n_attrs; i++)
        free(x->attrs[i]);
    free(x->children);
    free(x->attrs);
    free(x->name);
    free(x->text);
    free(x);
}

static void stop(tree_builder *t)
{
    t->out_of_memory = true;
    XML_StopParser(t->parser, XML_FALSE);
}

static ir_xml *new_element(const XML_Char *name, const XML_Char **attrs, int line)
{
    ir_xml *x = calloc(1, sizeof *x);
    if (x == NULL)
        return NULL;
    x->line = line;
    x->name = strdup(name);
    x->text = calloc(1, 1);
    int n = 0;
    while (attrs[2 * n] != NULL)
        n++;
    x->attrs = calloc(2 * (size_t)n + 1, sizeof *x->attrs);
    if (x->name == NULL || x->text == NULL || x->attrs == NULL) {
        ir_xml_free(x);
        return NULL;
    }
    for (int i = 0; i < 2 * n; i++) {
        x->attrs[i] = strdup(attrs[i]);
        if (x->attrs[i] == NULL) {
            x->n_attrs = (i + 1) / 2;
            ir_xml_free(x);
            return NULL;
        }
    }
    x->n_attrs = n;
    return x;
}

static bool add_child(ir_xml *parent, ir_xml *child)
{
    if (parent->n_children == parent->cap_children) {
        int cap = parent->cap_children ? 2 * parent->cap_children : 4;
        ir_xml **c = realloc(parent->children, (size_t)cap * sizeof *c);
        if (c == NULL)
            return false;
        parent->children = c;
        parent->cap_children = cap;
    }
    parent->children[parent->n_children++] = child;
    return true;
}

static void XMLCALL on_start(void *user, const XML_Char *name, const XML_Char **attrs)
{
    tree_builder *t = user;
    if (t->depth == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        ir_xml **s = realloc(t->stack, (size_t)cap * sizeof *s);
        if (s == NULL) {
            stop(t);
            return;
        }
        t->stack = s;
        t->cap = cap;
    }
    ir_xml *x = new_element(name, attrs, (int)XML_GetCurrentLineNumber(t->parser));
    if (x == NULL) {
        stop(t);
        return;
    }
    if (t->depth == 0) {
        t->root = x; /* Expat refuses a second document element itself */
    } else if (!add_child(t->stack[t->depth - 1], x)) {
        ir_xml_free(x);
        stop(t);
        return;
    }
    t->stack[t->depth++] = x;
}

static void XMLCALL on_end(void *user, const XML_Char *name)
{
    (void)name;
    tree_builder *t = user;
    t->depth--;
}

static void XMLCALL on_text(void *user, const XML_Char *s, int len)
{
    tree_builder *t = user;
    if (t->depth == 0 || len <= 0)
        return;
    ir_xml *x = t->stack[t->depth - 1];
    char *text = realloc(x->text, x->text_len + (size_t)len + 1);
    if (text == NULL) {
        stop(t);
        return;
    }
    memcpy(text + x->text_len, s, (size_t)len);
    x->text_len += (size_t)len;
    text[x->text_len] = '\0';
    x->text = text;
}

rn_status ir_xml_parse(const char *data, size_t size, ir_xml **out)
{
    if (size > (size_t)INT32_MAX)
        return rn_set_error(RN_UNSUPPORTED, "XML of %zu bytes is too large", size);
    tree_builder t = {.parser = XML_ParserCreate(NULL)};
    if (t.parser == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "out of memory creating the XML parser");
    XML_SetUserData(t.parser, &t);
    XML_SetElementHandler(t.parser, on_start, on_end);
    XML_SetCharacterDataHandler(t.parser, on_text);
    enum XML_Status ok = XML_Parse(t.parser, data, (int)size, XML_TRUE);
    rn_status st = RN_OK;
    if (t.out_of_memory) {
        st = rn_set_error(RN_OUT_OF_MEMORY, "out of memory reading the XML");
    } else if (ok != XML_STATUS_OK) {
        st = rn_set_error(RN_PARSE_ERROR, "malformed XML at line %lu, column %lu: %s",
                          (unsigned long)XML_GetCurrentLineNumber(t.parser),
                          (unsigned long)XML_GetCurrentColumnNumber(t.parser) + 1,
                          XML_ErrorString(XML_GetErrorCode(t.parser)));
    } else if (t.root == NULL) {
        st = rn_set_error(RN_PARSE_ERROR, "the XML has no element");
    }
    XML_ParserFree(t.parser);
    free(t.stack);
    if (st != RN_OK) {
        ir_xml_free(t.root);
        return st;
    }
    *out = t.root;
    return RN_OK;
}

const char *ir_xml_attr(const ir_xml *x, const char *name)
{
    for (int i = 0; i < x->n_attrs; i++)
        if (strcmp(x->attrs[2 * i], name) == 0)
            return x->attrs[2 * i + 1];
    return NULL;
}

const ir_xml *ir_xml_child(const ir_xml *x, const char *name)
{
    for (int i = 0; i < x->n_children; i++)
        if (strcmp(x->children[i]->name, name) == 0)
            return x->children[i];
    return NULL;
}
