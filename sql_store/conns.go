package sqlstore

// Usage is what a database server says of its client connections, as
// one session read them at one moment.
type Usage struct {
	// Max is max_connections.
	Max int
	// Reserved is how many of Max an ordinary user cannot take:
	// PostgreSQL's superuser_reserved_connections (and, from 16,
	// reserved_connections); 0 on MariaDB, whose one connection kept for
	// a privileged account comes on top of max_connections.
	Reserved int
	// UserMax is the user's own cap where the server has one
	// (MariaDB's max_user_connections); 0 if none.
	UserMax int
	// InUse is how many client connections are open, the reading
	// session's own left out; 0 when Unread is set.
	InUse int
	// Unread is why InUse could not be read, or nil.
	Unread error
}

// Accepts returns how many client connections the server accepts from
// ordinary users, all of them together: Max less Reserved.
func (u Usage) Accepts() int { return u.Max - u.Reserved }

// Usable returns how many client connections the server accepts from
// the reading session's user: Accepts, or UserMax if lower.
func (u Usage) Usable() int {
	if u.UserMax > 0 {
		return min(u.Accepts(), u.UserMax)
	}
	return u.Accepts()
}
