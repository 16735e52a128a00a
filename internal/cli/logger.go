package cli

import (
	"fmt"
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewLogger returns the logger of --log-format (json or console) and
// --log-level writing to w, and logs each start-up warning on it at warn
// level. Errors name the flag.
func NewLogger(w io.Writer, format, level string, warnings []string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %v", err)
	}
	var enc zapcore.Encoder
	switch format {
	case "json":
		enc = zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	case "console":
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		enc = zapcore.NewConsoleEncoder(ec)
	default:
		return nil, fmt.Errorf("--log-format must be json or console, got %q", format)
	}
	lg := zap.New(zapcore.NewCore(enc, zapcore.AddSync(w), lvl))
	for _, m := range warnings {
		lg.Warn(m)
	}
	return lg, nil
}
