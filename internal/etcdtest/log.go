package etcdtest

import "go.uber.org/zap"

func nopLogger() *zap.Logger { return zap.NewNop() }
