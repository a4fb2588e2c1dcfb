import DLPipe
import Foundation

/// `dl.store`: its primitives, and the state that holds it.
extension ScriptHost {
    /// `dl.store.get` and `dl.store.set`.
    func registerStore() {
        runtime.register("__dl.store_get", name: "dl.store.get") { [unowned self] args throws(LuaCallError) in
            try heldUsage.check()
            guard let key = args.first?.text else { return [.nil_] }
            bindStore(configDir: args.count > 1 ? args[1].text : nil)
            if readOnlyStore, let value = overlay[key] { return [value] }
            switch openStore(configDir: args.count > 1 ? args[1].text : nil) {
            case .failure where readOnlyStore: return [.nil_]  // check: no state yet is an empty store
            case .failure(let error): return [.nil_, LuaValue(error.message)]
            case .success(let store):
                do throws(StateFailure) {
                    return [try store.value(key).map(StoreCodec.value) ?? .nil_]
                } catch {
                    return [.nil_, LuaValue(error.message)]
                }
            }
        }
        runtime.register("__dl.store_set", name: "dl.store.set", cost: 5) { [unowned self] args throws(LuaCallError) in
            try heldUsage.check()
            guard let key = args.first?.text else { return [.nil_, LuaValue("a key is needed")] }
            let value = args.count > 1 ? args[1] : .nil_
            bindStore(configDir: args.count > 2 ? args[2].text : nil)
            if readOnlyStore {
                // the same checks as a real write
                let text: String
                do throws(StoreCodec.Unstorable) { text = try StoreCodec.text(value) } catch { return [.nil_, LuaValue(error.message)] }
                do throws(JobStore.Refused) { try JobStore.check(text) } catch { return [.nil_, LuaValue(error.message)] }
                overlay[key] = value
                return [.boolean(true)]
            }
            switch openStore(configDir: args.count > 2 ? args[2].text : nil) {
            case .failure(let error): return [.nil_, LuaValue(error.message)]
            case .success(let store):
                let text: String
                do throws(StoreCodec.Unstorable) { text = try StoreCodec.text(value) } catch { return [.nil_, LuaValue(error.message)] }
                do throws(JobStore.Refused) { try store.setValue(key, text) } catch { return [.nil_, LuaValue(error.message)] }
                return [.boolean(true)]
            }
        }
    }

    /// The first use of the store, with neither `-d` nor `--state`, takes the
    /// state of the job's `dl.config{dir}` so far: `check` (whose writes stay
    /// in memory) binds it too, so it reports a later `dir` as `run` does.
    func bindStore(configDir: String?) {
        if statePath == nil && stateDirectory == nil && storeBoundTo == nil { storeBoundTo = configDir ?? "." }
    }

    /// `dl.store` in `make`'s state from now on; a store opened before is let go.
    func useStore(_ make: @escaping @Sendable () throws(StateFailure) -> any DownloadState, namespace: String?) {
        storeState = make
        storeStateNamespace = namespace
        store = nil
    }

    /// The store's own connection (the engine has another; SQLite's WAL lets both work).
    func openStore(configDir: String?) -> Result<JobStore, ScriptError> {
        if let store { return .success(store) }
        if let storeState {
            do throws(StateFailure) {
                let opened = JobStore(
                    namespace: storeStateNamespace ?? storeNamespace, earlierNamespace: storeNamespace, state: try storeState())
                store = opened
                return .success(opened)
            } catch {
                return .failure(ScriptError(error.message))
            }
        }
        bindStore(configDir: configDir)
        let path = statePath ?? StateLayout(directory: stateDirectory ?? configDir ?? ".").database
        if readOnlyStore && !FileManager.default.fileExists(atPath: path) {
            return .failure(ScriptError("no state yet"))
        }
        do throws(StateFailure) {
            let opened = JobStore(namespace: storeNamespace, state: try StateStore(path: path))
            store = opened
            return .success(opened)
        } catch {
            return .failure(ScriptError(error.message))
        }
    }
}
