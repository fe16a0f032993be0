package mysqlstore

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/logevery"
	"github.com/ratelab/ratelab/internal/redact"
)

// DriverLog takes go-sql-driver/mysql's own lines into a program's log:
// the cause of a connection it gave up on (a read that timed out, which
// it returns as the bare mysql.ErrInvalidConn), as the store's warnings,
// at most one from each place in the driver every ratelab.LogEvery, where
// the driver would print each to standard error, unformatted; a URL's
// user information and a password= value in a line are masked
// (redact.Line). The driver
// has one logger per process, not one per connection, so the store
// cannot set it: a program does, once, in main:
//
//	mysql.SetLogger(mysqlstore.NewDriverLog(logger))
type DriverLog struct{ log *logevery.Log }

// NewDriverLog returns a DriverLog writing to logger.
func NewDriverLog(logger *slog.Logger) *DriverLog {
	return &DriverLog{logevery.New(logger, ratelab.LogEvery)}
}

// Print logs one of the driver's lines as a warning. The driver puts the
// file and line it logs from first, which keys the line.
func (l *DriverLog) Print(v ...any) { l.printAt(time.Now(), v...) }

func (l *DriverLog) printAt(now time.Time, v ...any) {
	key := ""
	if len(v) > 0 {
		key = fmt.Sprint(v[0])
	}
	l.log.KeyAt(now, key, slog.LevelWarn, "mysqlstore: driver: "+redact.Line(fmt.Sprint(v...)))
}
