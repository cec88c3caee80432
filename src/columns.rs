//! The task table's columns: one list for the table, its sort, and the lessons that
//! point at a column (a leaf module, so `lesson` can name them without importing `app`).

/// A column of the task table, in table order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Column {
    Task,
    PidTid,
    Policy,
    Nice,
    Cpus,
    Now,
    Cpu,
    /// The ideal share from the nice weights (fairness presets only).
    Ideal,
    Wait,
    Switches,
    Migrations,
    Progress,
}

impl Column {
    /// Every column, in the order the table shows them.
    pub const ALL: [Column; 12] = [
        Column::Task,
        Column::PidTid,
        Column::Policy,
        Column::Nice,
        Column::Cpus,
        Column::Now,
        Column::Cpu,
        Column::Ideal,
        Column::Wait,
        Column::Switches,
        Column::Migrations,
        Column::Progress,
    ];

    pub fn header(self) -> &'static str {
        match self {
            Column::Task => "TASK",
            Column::PidTid => "PID/TID",
            Column::Policy => "POLICY",
            Column::Nice => "NICE",
            Column::Cpus => "CPUS",
            Column::Now => "NOW",
            Column::Cpu => "CPU%",
            Column::Ideal => "IDEAL%",
            Column::Wait => "WAIT%",
            Column::Switches => "VOL/INV /s",
            Column::Migrations => "MIG/s",
            Column::Progress => "PROGRESS",
        }
    }

    /// Rates sort biggest first (the busiest task on top); names, ids, CPUs and nice in
    /// order.
    pub fn descending(self) -> bool {
        matches!(
            self,
            Column::Cpu
                | Column::Ideal
                | Column::Wait
                | Column::Switches
                | Column::Migrations
                | Column::Progress
        )
    }
}
