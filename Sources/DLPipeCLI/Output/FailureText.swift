/// A failure's message on a line that already names its download's URL.
///
/// An HTTP error names the URL that answered ("HTTP 404 from URL"): for a
/// download that was not redirected, the line's own, so the line said it
/// twice (`failed URL: HTTP 404 from URL [3, http]`, and in `status`,
/// `URL: http: HTTP 404 from URL`). There " from URL" is left out; a
/// redirect's hop keeps it (another URL answered). Only the text for people
/// changes: the stored error and `--json` keep the whole message.
enum FailureText {
    /// `message` without " from URL" where URL is `url` (as the line shows
    /// it, credentials hidden) and ends there.
    static func withoutOwnURL(_ message: String, url: String) -> String {
        guard !url.isEmpty, let range = message.range(of: " from " + url) else { return message }
        // A longer URL that begins with this one is another URL.
        let next = message[range.upperBound...].first
        guard next == nil || next == " " || next == "\n" || next == ";" || next == "," else { return message }
        return message.replacingCharacters(in: range, with: "")
    }
}
