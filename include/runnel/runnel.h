/* runnel: the public C API. Include this one header. */
#ifndef RUNNEL_RUNNEL_H
#define RUNNEL_RUNNEL_H

#include "runnel/status.h"
#include "runnel/tensor.h"
#include "runnel/core.h"
#include "runnel/model.h"
#include "runnel/compiled_model.h"
#include "runnel/infer_request.h"
#include "runnel/remote.h"
#include "runnel/version.h"

#endif /* RUNNEL_RUNNEL_H */
