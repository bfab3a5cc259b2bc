// mtf/mtf.h — the whole public API of mtf.
#pragma once

#include "mtf/auto_layout.h"
#include "mtf/checkpoint.h"
#include "mtf/collectives.h"
#include "mtf/dtype.h"
#include "mtf/errors.h"
#include "mtf/gradients.h"
#include "mtf/graph.h"
#include "mtf/host_tensor.h"
#include "mtf/layers.h"
#include "mtf/layout.h"
#include "mtf/ops.h"
#include "mtf/optimizers.h"
#include "mtf/session.h"
#include "mtf/shape.h"
#include "mtf/sim.h"
#include "mtf/variables.h"
