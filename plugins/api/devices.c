/* The device lists of HETERO and AUTO, and query_model over them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/devices.h"

bool plugin_device_is_meta(const rn_plugin_ops *ops, rn_plugin *plugin)
{
    char probe[8];
    bool meta = ops->get_property != NULL && ops->get_property(plugin, "MULTI_DEVICE_PRIORITIES",
                                                               probe, sizeof probe) != RN_NOT_FOUND;
    rn_clear_error();
    return meta;
}

rn_status plugin_devices_resolve(rn_core *core, const char *who, const char *list,
                                 plugin_devices *out)
{
    plugin_devices d = {0};
    if (core == NULL)
        return rn_set_error(RN_INTERNAL, "%s: no core attached", who);
    if (list[0] == '\0')
        return rn_set_error(RN_INVALID_ARG,
                            "%s: no devices given: name them as %s:D1,D2 or with "
                            "MULTI_DEVICE_PRIORITIES",
                            who, who);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *name = strtok_r(buf, ",", &save); name != NULL; name = strtok_r(NULL, ",", &save)) {
        while (*name == ' ')
            name++;
        if (d.n == PLUGIN_MAX_DEVICES)
            return rn_set_error(RN_INVALID_ARG, "%s: more than %d devices in '%s'", who,
                                PLUGIN_MAX_DEVICES, list);
        plugin_device *dev = &d.at[d.n];
        if (strlen(name) == 0 || strlen(name) >= sizeof dev->name)
            return rn_set_error(RN_INVALID_ARG, "%s: bad device list '%s'", who, list);
        rn_status st = rn_core_device_plugin(core, name, &dev->ops, &dev->plugin);
        if (st != RN_OK)
            return rn_wrap_error(st, "%s: ", who);
        if (plugin_device_is_meta(dev->ops, dev->plugin))
            return rn_set_error(RN_INVALID_ARG,
                                "%s: %s runs models on other devices and cannot be one of %s's",
                                who, name, who);
        snprintf(dev->name, sizeof dev->name, "%s", name);
        d.n++;
    }
    *out = d;
    return RN_OK;
}

rn_status plugin_devices_query_union(const plugin_devices *devs, const rn_graph *model,
                                     const rn_property *f, size_t nf, char ***names_out,
                                     bool **supported_out, size_t *count_out)
{
    rn_status st = RN_OK;
    char **names = NULL;
    bool *supported = NULL;
    size_t count = 0;
    for (int d = 0; d < devs->n && st == RN_OK; d++) {
        const plugin_device *dev = &devs->at[d];
        if (dev->ops->query_model == NULL)
            continue;
        char **dn;
        bool *dok;
        size_t dc;
        if ((st = dev->ops->query_model(dev->plugin, model, f, nf, &dn, &dok, &dc)) != RN_OK) {
            rn_wrap_error(st, "query_model of %s: ", dev->name);
            break;
        }
        for (size_t e = 0; e < dc; e++) {
            size_t k = 0;
            while (k < count && strcmp(names[k], dn[e]) != 0)
                k++;
            if (k < count) {
                supported[k] = supported[k] || dok[e];
                free(dn[e]);
                continue;
            }
            char **nn = realloc(names, (count + 1) * sizeof *nn);
            bool *ns = nn != NULL ? realloc(supported, (count + 1) * sizeof *ns) : NULL;
            if (nn != NULL)
                names = nn;
            if (ns == NULL) {
                for (; e < dc; e++)
                    free(dn[e]);
                st = rn_set_error(RN_OUT_OF_MEMORY, "query_model: out of memory");
                break;
            }
            supported = ns;
            names[count] = dn[e];
            supported[count++] = dok[e];
        }
        free(dn);
        free(dok);
    }
    if (st != RN_OK) {
        for (size_t k = 0; k < count; k++)
            free(names[k]);
        free(names);
        free(supported);
        return st;
    }
    *names_out = names;
    *supported_out = supported;
    *count_out = count;
    return RN_OK;
}

/* Replaces an owned list of properties by copies of `src` (whose strings
 * may be the list's own or the caller's). */
static rn_status own_forward(rn_property *dst, size_t *n_dst, const rn_property *src, size_t n)
{
    rn_property tmp[PLUGIN_MAX_FORWARD];
    for (size_t i = 0; i < n; i++) {
        tmp[i].key = strdup(src[i].key);
        tmp[i].value = strdup(src[i].value);
        if (tmp[i].key == NULL || tmp[i].value == NULL) {
            for (size_t k = 0; k <= i; k++) {
                free((char *)tmp[k].key);
                free((char *)tmp[k].value);
            }
            return rn_set_error(RN_OUT_OF_MEMORY, "properties: out of memory");
        }
    }
    for (size_t i = 0; i < *n_dst; i++) {
        free((char *)dst[i].key);
        free((char *)dst[i].value);
    }
    memcpy(dst, tmp, n * sizeof *tmp);
    *n_dst = n;
    return RN_OK;
}

rn_status plugin_meta_apply(plugin_meta_settings *s, void *config, size_t config_size,
                            plugin_own_key_fn own, const rn_property *p, size_t n)
{
    unsigned char cfg[8192];
    if (config_size > sizeof cfg)
        return rn_set_error(RN_INTERNAL, "properties: config too large");
    memcpy(cfg, config, config_size);
    plugin_properties pp = s->props;
    size_t nf = s->n_forward;
    rn_property f[PLUGIN_MAX_FORWARD];
    memcpy(f, s->forward, nf * sizeof *f);
    rn_status st = RN_OK;
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        bool taken = false;
        if ((st = own(cfg, p[i].key, p[i].value, &taken)) != RN_OK || taken)
            continue;
        if ((st = plugin_properties_set(&pp, p[i].key, p[i].value)) != RN_OK)
            break;
        size_t k = 0;
        while (k < nf && strcmp(f[k].key, p[i].key) != 0)
            k++;
        if (k == nf && nf == PLUGIN_MAX_FORWARD)
            st = rn_set_error(RN_INVALID_ARG, "properties: more than %d keys", PLUGIN_MAX_FORWARD);
        else
            f[k] = p[i], nf += k == nf;
    }
    if (st == RN_OK)
        st = own_forward(s->forward, &s->n_forward, f, nf);
    if (st != RN_OK)
        return st;
    memcpy(config, cfg, config_size);
    s->props = pp;
    return RN_OK;
}

rn_status plugin_meta_copy(plugin_meta_settings *dst, const plugin_meta_settings *src)
{
    rn_status st = own_forward(dst->forward, &dst->n_forward, src->forward, src->n_forward);
    if (st == RN_OK)
        dst->props = src->props;
    return st;
}

void plugin_meta_release(plugin_meta_settings *s)
{
    for (size_t i = 0; i < s->n_forward; i++) {
        free((char *)s->forward[i].key);
        free((char *)s->forward[i].value);
    }
    s->n_forward = 0;
}

rn_status plugin_meta_supported(const char *const *own_keys, char *buf, size_t size)
{
    char list[1024] = "SUPPORTED_PROPERTIES FULL_DEVICE_NAME DEVICE_ARCHITECTURE";
    size_t used = strlen(list);
    for (int i = 0; own_keys[i] != NULL && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, " %s", own_keys[i]);
    for (int i = 0; plugin_rw_property_keys[i] != NULL && used < sizeof list; i++)
        used +=
            (size_t)snprintf(list + used, sizeof list - used, " %s", plugin_rw_property_keys[i]);
    return plugin_property_string("SUPPORTED_PROPERTIES", list, buf, size);
}

void *plugin_meta_device_create(size_t size)
{
    plugin_meta_device *d = calloc(1, size);
    if (d == NULL) {
        rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&d->lock, NULL);
    plugin_properties_default(&d->s.props);
    return d;
}

void plugin_meta_device_destroy(void *device)
{
    plugin_meta_device *d = device;
    if (d == NULL)
        return;
    plugin_meta_release(&d->s);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

rn_status plugin_meta_set(plugin_meta_device *d, void *config, size_t config_size,
                          plugin_own_key_fn own, const rn_property *p, size_t n)
{
    pthread_mutex_lock(&d->lock);
    rn_status st = plugin_meta_apply(&d->s, config, config_size, own, p, n);
    pthread_mutex_unlock(&d->lock);
    return st;
}

rn_status plugin_meta_snapshot(plugin_meta_device *d, const void *config, void *config_out,
                               size_t config_size, plugin_meta_settings *dst)
{
    pthread_mutex_lock(&d->lock);
    memcpy(config_out, config, config_size);
    rn_status st = plugin_meta_copy(dst, &d->s);
    pthread_mutex_unlock(&d->lock);
    return st;
}

rn_status plugin_meta_get(pthread_mutex_t *lock, const void *config, plugin_own_get_fn own,
                          const plugin_properties *props, const char *who, const char *key,
                          char *buf, size_t size)
{
    pthread_mutex_lock(lock);
    rn_status st = own(config, key, buf, size);
    if (st == RN_NOT_FOUND)
        st = plugin_properties_get(props, key, buf, size);
    pthread_mutex_unlock(lock);
    if (st == RN_NOT_FOUND)
        return rn_set_error(RN_NOT_FOUND, "%s: unknown property '%s'", who, key);
    return st;
}

rn_status plugin_meta_set_compiled(pthread_mutex_t *lock, plugin_properties *props, int n,
                                   plugin_meta_part_fn part, void *ctx, const rn_property *p,
                                   size_t n_props)
{
    pthread_mutex_lock(lock);
    plugin_properties pp = *props;
    rn_status st = plugin_properties_set_compiled(&pp, p, n_props);
    for (int i = 0; i < n && st == RN_OK; i++) {
        const rn_compiled_model_ops *ops = NULL;
        rn_plugin_compiled *compiled = NULL;
        part(ctx, i, &ops, &compiled);
        if (ops != NULL && ops->set_property != NULL)
            st = ops->set_property(compiled, p, n_props);
    }
    if (st == RN_OK)
        *props = pp;
    pthread_mutex_unlock(lock);
    return st;
}
