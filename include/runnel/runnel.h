/* runnel: the public C API. Include this one header. */
#ifndef RUNNEL_RUNNEL_H
#define RUNNEL_RUNNEL_H

#include "runnel/status.h"
#include "runnel/tensor.h"
#include "runnel/core.h"
#include "runnel/model.h"
#include "runnel/compiled_model.h"
#include "runnel/infer_request.h"

#define RN_VERSION_MAJOR 0
#define RN_VERSION_MINOR 1
#define RN_VERSION_PATCH 0

#endif /* RUNNEL_RUNNEL_H */
