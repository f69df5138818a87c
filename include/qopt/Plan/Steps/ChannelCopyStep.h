//===- ChannelCopyStep.h - Concat and Split along channels ------*- C++ -*-===//
//
// The class of one kind of plan step (qopt/Plan/PlanSteps.def); what it does,
// its fields, checks and work are in lib/Plan/Steps/ChannelCopyStep.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_STEPS_CHANNEL_COPY_STEP_H
#define QOPT_PLAN_STEPS_CHANNEL_COPY_STEP_H

#include "qopt/Plan/Plan.h"

namespace qopt {
namespace plan {

/// Concat or Split along the channels of NHWC tensors: each piece copies
/// `channels` channels of every pixel from one tensor to another, through
/// a 256-entry table of stored bytes where it requantizes (q.concat), or
/// onto a grid from f32. Tensors in ONNX layout (q.concat along any axis) are
/// `rows` rows, each index before the axis one, spanning the elements from the
/// axis on; a piece's channels are then elements of every row.
class ChannelCopyStep : public PlanStep {
public:
  struct Piece {
    int from, to; ///< tensor ids
    int64_t fromChannel, toChannel, channels;
    std::vector<uint8_t> table; ///< empty: a copy
    /// Set: f32 channels quantized onto int8 bytes (Int8Quantize.h), the
    /// quantize step that read a copy's result done in the copy. No table.
    std::optional<kernels::QuantizeGrid> grid;
  };
  ChannelCopyStep(std::string name, std::vector<Piece> pieces, int64_t rows);
  ~ChannelCopyStep() override;
  /// Rows of pixels (batch * height), or rows in ONNX layout.
  int64_t getNumTiles() const override { return rows; }
  llvm::ArrayRef<Piece> getPieces() const { return pieces; }
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  llvm::Error writeFields(planfile::PlanEncoder &out) const override;
  llvm::Error verify(const PlanVerifier &check) const override;
  static bool classof(const PlanStep *s) {
    return s->getKind() == Kind::ChannelCopy;
  }

private:
  std::vector<Piece> pieces;
  int64_t rows;
  /// Many one-channel pieces (a Gather of channels, a channel shuffle) as
  /// per-result gathers with index lists, built once from the pieces
  /// (ChannelCopyStep.cpp); empty when they are not that.
  struct Gather;
  std::vector<Gather> gathers;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_STEPS_CHANNEL_COPY_STEP_H
