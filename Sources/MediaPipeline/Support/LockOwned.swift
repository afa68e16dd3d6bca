/// A value that is not `Sendable` (a class without a lock of its own, a buffer of unsafe
/// pointers), kept inside a `Sendable` value that a ``LockedValue`` guards, so that whoever holds
/// that lock is its only user. The compiler cannot check that claim: each use is declared where
/// the field is, with the lock that owns it, and nowhere else is a value unchecked this way.
struct LockOwned<Value>: @unchecked Sendable {
    /// The value; reach it only while holding the enclosing lock.
    var value: Value

    /// A value owned by the enclosing lock.
    init(_ value: Value) { self.value = value }
}
