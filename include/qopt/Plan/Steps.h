//===- Steps.h - Every kind of plan step ------------------------*- C++ -*-===//
//
// The classes of all the plan step kinds of qopt/Plan/PlanSteps.def, for
// code that builds or rewrites plans of any kind (lib/CodeGen, the tools).
// Code that needs one kind includes its header alone.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_STEPS_H
#define QOPT_PLAN_STEPS_H

#include "qopt/Plan/Steps/AveragePoolStep.h"
#include "qopt/Plan/Steps/ChannelCopyStep.h"
#include "qopt/Plan/Steps/ConvStep.h"
#include "qopt/Plan/Steps/DynamicGemmStep.h"
#include "qopt/Plan/Steps/DynamicQuantizeStep.h"
#include "qopt/Plan/Steps/FloatStep.h"
#include "qopt/Plan/Steps/GemmStep.h"
#include "qopt/Plan/Steps/Int4GemmStep.h"
#include "qopt/Plan/Steps/MatMulStep.h"
#include "qopt/Plan/Steps/PoolStep.h"
#include "qopt/Plan/Steps/QuantizeStep.h"
#include "qopt/Plan/Steps/ReformatStep.h"
#include "qopt/Plan/Steps/ResizeStep.h"
#include "qopt/Plan/Steps/TableStep.h"

#endif // QOPT_PLAN_STEPS_H
